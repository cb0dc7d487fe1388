"""`triton.experimental`: Gluon (`gluon`), Triton's lower-level language, on minitriton."""
