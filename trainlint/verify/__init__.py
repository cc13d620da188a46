"""`trainlint verify`: run a training script before and after a fix, measure the speedup and
check that the loss curve still matches.

Importing this package (or trainlint.verify.command) never imports torch; only the process
that runs the user's script (trainlint.verify.harness) does.
"""
