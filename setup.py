"""The compiled parts of otelbench (pyproject.toml has everything else): the OTLP wire
format read in C (normalize/_wire.pyx) and the canonical messages check
(normalize/_messages.pyx). Without Cython or a C compiler the package still installs:
ptars decodes and the regex checks, more slowly (normalize.wire.COMPILED is False)."""

from setuptools import setup

try:
    from Cython.Build import cythonize
except ImportError:  # a build without Cython: the pure-Python package, ptars decodes
    ext_modules = []
else:
    ext_modules = cythonize(["normalize/_wire.pyx", "normalize/_messages.pyx"], compiler_directives={"language_level": "3"}, quiet=True)

setup(ext_modules=ext_modules)
