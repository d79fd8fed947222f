# Starts a program when it is imported, as a notebook turned into a .py file often does (`!pip install`,
# `!nvidia-smi`): not allowed while grading. The student must read that, with this line, and no grader's path.
import subprocess
import sys

subprocess.Popen([sys.executable, "-m", "pip", "--version"])
