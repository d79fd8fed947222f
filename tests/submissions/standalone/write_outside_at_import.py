# Writes a log next to its own folder when it is imported: not allowed while grading. The student must read
# that, with this line, and no grader's path.
with open("../attention-log.txt", "w") as handle:
    handle.write("loaded\n")
