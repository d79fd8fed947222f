"""nbgrader settings for the scaled dot-product attention course.

Run every instructor command from this folder (the course root). The exchange is a local
folder beside it; students point at it with --course sdpa-course --Exchange.root <that folder>.
"""

import os

here = os.path.dirname(os.path.abspath(__file__))
c = get_config()  # noqa: F821 - provided by nbgrader

c.CourseDirectory.course_id = "sdpa-course"
c.CourseDirectory.root = here
c.Exchange.root = os.path.join(here, "exchange")
c.Exchange.path_includes_course = True

# The stub students see in place of each solution region.
c.ClearSolutions.code_stub = {
    "python": '# YOUR CODE HERE\nraise NotImplementedError("replace this line with your code")'
}

# Autograde without running the student's code in a Jupyter kernel: GradeNotebook takes the place of
# nbgrader's Execute and grades each notebook as sdpa-grade does (the student's cells run only in its
# kernel sandbox; limits per call and per check from the grading settings), then writes each hidden
# cell's verdict into it. The rest of nbgrader's autograde steps are kept as they are.
from nbgrader.converters import Autograde
from nbgrader.preprocessors import Execute

c.Autograde.autograde_preprocessors = [
    "autograder.nbgrader_path.autograde.GradeNotebook" if step is Execute else step
    for step in Autograde.class_traits()["autograde_preprocessors"].default()
]
# A student's notebook with a pasted copy of a graded cell (its nbgrader id twice) or corrupt nbgrader metadata stopped
# autograde for the whole class: autograder.nbgrader_path.autograde.DeduplicateIds takes the place of nbgrader's, first of the
# sanitizing steps, and reports such a notebook for that student alone (graded where it can be).
from nbgrader.preprocessors import DeduplicateIds

c.Autograde.sanitize_preprocessors = ["autograder.nbgrader_path.autograde.DeduplicateIds"] + [
    step for step in Autograde.class_traits()["sanitize_preprocessors"].default() if step is not DeduplicateIds
]
# c.GradeNotebook.settings_file = "grading.toml"  # as sdpa-grade --config FILE
# c.GradeNotebook.require_sandbox = True          # as sdpa-grade --require-sandbox

# Late penalties from the grading settings' [deadline] (due date, grace, policy, extensions), as sdpa-grade applies
# them; nbgrader asks only for submissions later than its own due date for the assignment: set it no later.
c.AssignLatePenalties.plugin_class = "autograder.nbgrader_path.late_plugin.CourseDeadline"

# nbgrader export writes the grade of record: the results sdpa-grade batch wrote for the collected notebooks
# (sdpa-grade batch submitted: submitted-grades), with the instructor's decisions (hold, clear, override, extend), in
# nbgrader's CSV columns and a status column; without a record there yet, nbgrader's gradebook as it is, with a warning
# (autograder/nbgrader_path/export.py, docs/instructor.md "The grade of record").
c.ExportApp.plugin_class = "autograder.nbgrader_path.export.RecordExport"
# c.RecordExport.results = "grades"  # the batch's --json-dir, where it is not submitted-grades

# Collecting as root (containers, CI) would otherwise refuse submissions owned by others.
c.ExchangeCollect.check_owner = False

# Feedback: nbgrader's page with each graded cell named in the table of contents and error
# output wrapped (feedback_template/sdpa_feedback), on top of nbgrader's own feedback template.
import nbgrader  # noqa: E402 - only to find nbgrader's templates

c.HTMLExporter.template_name = "sdpa_feedback"
# A student's markup never runs in a feedback page: HTML outputs go through nbconvert's own sanitiser
# (sanitize_html), and every markdown cell, once rendered, through the same sanitiser with the tags markdown
# writes (autograder/render/sanitise.py, applied by the template below): <script>, <img onerror> and
# javascript: links are shown as text or dropped.
c.HTMLExporter.sanitize_html = True
c.HTMLExporter.filters = {"sanitised": "autograder.render.sanitise.sanitised"}
c.HTMLExporter.template_file = "sdpa_feedback.html.j2"  # not index.html.j2: it extends nbgrader's of that name
c.HTMLExporter.extra_template_basedirs = [
    os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader", "templates"),
    os.path.join(here, "feedback_template"),
]

# A notebook handed in under another name (a browser's "sdpa (1).ipynb", JupyterLab's "sdpa-Copy1.ipynb") is graded
# as sdpa-grade grades it, never skipped as unknown: the one rule picks the file, and a copy under the released name is
# graded, the student named in the log (autograder/nbgrader_path/renamed.py).
from autograder.nbgrader_path.renamed import graded_name  # noqa: E402

c.Autograde.pre_convert_hook = graded_name
# A hidden check's cell the student deleted (VS Code, a Cut) is put back before grading, from the gradebook's copy of
# the source notebook, so that every check is scored whatever the notebook kept; GradeNotebook refuses a notebook that
# still lacks one (nbgrader would score the check 0 without a word).
c.OverwriteCells.add_missing_cells = True
