"""`python -m minitriton script.py [args...]`: a Triton program on the CPU (minitriton.runner)."""
import sys

from minitriton.runner import main

if __name__ == "__main__":
    sys.exit(main())
