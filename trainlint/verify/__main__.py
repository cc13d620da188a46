"""`python -m trainlint.verify SCRIPT ...`: the verify command without the trainlint CLI."""

from trainlint.verify.command import main

main()
