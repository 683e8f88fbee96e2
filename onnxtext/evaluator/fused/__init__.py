"""The run-time objects the optimizer's rewrites put in a plan in place of several steps.

Each is a plain callable taking the step's input values; each keeps what it needs to fall back to
the original kernels for inputs it was not prepared for.
"""
