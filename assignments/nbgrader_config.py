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
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Autograde robustly: Execute.timeout is per cell (the first hidden check of a function runs all
# of that function's checks); a student who ignores SIGINT must not make autograde drop the
# notebook; a cell that raises must not stop the rest.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
c.Execute.raise_on_iopub_timeout = False
c.Execute.allow_errors = True

# Collecting as root (containers, CI) would otherwise refuse submissions owned by others.
c.CollectApp.check_owner = False
