"""minitriton standing in for `triton`: the modules a Triton program imports (modules.py), the
emulated GPU its driver reports (target.py) and the tutorials' cuBLAS baseline (cublas.py).

It sits below the front door (`minitriton/__init__.py` re-exports `install_as_triton`) and above
everything the stand-in modules expose; the runner (`python -m minitriton`) and the pytest
plugin use it. Nothing here imports the front door: the front module's names are passed in.
"""
