"""nbgrader settings for the scaled dot-product attention course.

Run every instructor command from this folder (the course root). The exchange is a local
folder beside it; students point at it with --course sdpa-course --Exchange.root <that folder>.
"""

import logging
import os

here = os.path.dirname(os.path.abspath(__file__))
c = get_config()  # noqa: F821 - provided by nbgrader

c.CourseDirectory.course_id = "sdpa-course"
c.CourseDirectory.root = here
c.Exchange.root = os.path.join(here, "exchange")
c.Exchange.path_includes_course = True

# The stub students see in place of each solution region.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError(\"replace this line with your code\")"}

# Autograde robustly: Execute.timeout is per cell (the first hidden check of a function runs all
# of that function's checks); a student who ignores SIGINT must not make autograde drop the
# notebook. (A cell that raises never stops the rest: nbgrader's Execute always allows errors.)
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
c.Execute.raise_on_iopub_timeout = False

# Autograde puts every hidden test back into its cell: students receive the cell without it, so
# nbgrader finds its checksum changed and says so, once per hidden cell and student, as if the
# student had tampered with it. For these cells that message is only nbgrader's own doing, so it
# is dropped here; for any other locked cell (the public tests) it still shows.
class _HiddenTestsRestored(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        restored = record.msg.startswith("Attribute '%s' for cell") and args[:1] == ("checksum",)
        return not (restored and str(args[1]).startswith("check_"))


logging.getLogger("AutogradeApp").addFilter(_HiddenTestsRestored())

# Collecting as root (containers, CI) would otherwise refuse submissions owned by others.
c.ExchangeCollect.check_owner = False

# Feedback: nbgrader's page with each graded cell named in the table of contents and error
# output wrapped (feedback_template/sdpa_feedback), on top of nbgrader's own feedback template.
import nbgrader  # noqa: E402 - only to find nbgrader's templates

c.HTMLExporter.template_name = "sdpa_feedback"
c.HTMLExporter.template_file = "sdpa_feedback.html.j2"  # not index.html.j2: it extends nbgrader's of that name
c.HTMLExporter.extra_template_basedirs = [
    os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader", "templates"),
    os.path.join(here, "feedback_template"),
]
