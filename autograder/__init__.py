"""Hidden autograder for the scaled dot-product attention assignment (instructors only)."""
