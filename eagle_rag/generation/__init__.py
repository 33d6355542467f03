"""Answers: grounded, cited generation over retrieved evidence (DESIGN §7)."""
