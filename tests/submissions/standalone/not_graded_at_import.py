# An exception class named as the grader's own finding that a submission could not be read ("not graded"), raised
# at import: still the student's own error, explained as any other (nothing the submission says about itself is
# believed)
raise type("not graded", (Exception,), {})("the student's own exception")
