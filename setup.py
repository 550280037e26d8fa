"""Build hook: the wheel carries the sample estate, so ``finops demo`` works from an installed package.

``samples/`` stays at the top of the source tree (the README, docs and tests use those paths); at build time
its data files (not the generator scripts) are copied to ``finops_cli/_samples`` inside the wheel, where
:func:`finops_cli.demo.default_samples_dir` finds them. All other metadata is in ``pyproject.toml``.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithSamples(build_py):
    """``build_py`` plus a copy of ``samples/`` (data only) into ``finops_cli/_samples``."""

    def run(self) -> None:
        super().run()
        source = Path(__file__).resolve().parent / "samples"
        if not source.is_dir():  # building from an sdist that lacks them would ship a demo that cannot run
            raise SystemExit(f"samples/ not found next to setup.py ({source})")
        target = Path(self.build_lib) / "finops_cli" / "_samples"
        ignore = shutil.ignore_patterns("__pycache__", "*.py", "*.pyc")
        shutil.copytree(source, target, ignore=ignore, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithSamples})
