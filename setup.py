"""What pyproject.toml cannot say: the package layout and the compiled parts.

Every folder of the repository installs under the one ``otelbench`` namespace
(``storage/`` as ``otelbench.storage``, ...), so the layout stays the architecture and
nothing installed claims a generic top-level name; the Python SDK's one source,
``sdk/python/otelbench_sdk``, is also ``otelbench.sdk``, and the agent suites of
``benchmarks/suites`` are ``otelbench/suites``. The OTLP wire format is read in
C (normalize/_wire.pyx) and the canonical messages checked in C (normalize/_messages.pyx);
without Cython or a C compiler the package still installs: ptars decodes and the regex
checks, more slowly (otelbench.normalize.wire.COMPILED is False)."""

from setuptools import Extension, find_namespace_packages, setup

FOLDERS = ("storage", "normalize", "exporters", "processors", "web", "collector", "bench_runner")
PACKAGE_DIR = {"otelbench": "otelbench", **{f"otelbench.{folder}": folder for folder in FOLDERS},
               "otelbench.sdk": "sdk/python/otelbench_sdk"}
# data folders (templates, fonts, prompts, ...) are listed as packages too: their files
# install as package data, and setuptools then has no importable folder it was not told of
PACKAGES = [f"{package}.{sub}" if sub else package
            for package, folder in PACKAGE_DIR.items()
            for sub in ("", *find_namespace_packages(folder, exclude=["*__pycache__*", "*.egg-info"]))]
# the agent suites that ship (data only: bench_runner/agent_suite.py finds them here once installed)
PACKAGE_DIR["otelbench.suites"] = "benchmarks/suites"
PACKAGES.append("otelbench.suites")
COMPILED = ("_wire", "_messages")

try:
    from Cython.Build import cythonize
except ImportError:  # a build without Cython: the pure-Python package, ptars decodes
    ext_modules = []
else:
    ext_modules = cythonize([Extension(f"otelbench.normalize.{name}", [f"normalize/{name}.pyx"]) for name in COMPILED],
                            compiler_directives={"language_level": "3"}, quiet=True)

setup(packages=PACKAGES, package_dir=PACKAGE_DIR, ext_modules=ext_modules)
