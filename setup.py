"""Build hook: the wheel carries the pricebook and the sample estate, so an installed package reads its prices and
``finops demo`` works.

``pricebooks/`` and ``samples/`` stay at the top of the source tree (the data users read and edit; the README,
docs and tests use those paths). At build time their data files (not the generator scripts) are copied into the
wheel, to ``finops_cli/pricebooks`` and ``finops_cli/_samples``, where
:func:`finops_cli.catalog.pricebook.pricebook_dir` and :func:`finops_cli.demo.default_samples_dir` find them; an
editable install reads the folders themselves. All other metadata is in ``pyproject.toml``.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: top-level data folder → where the wheel carries it
DATA = {"pricebooks": "pricebooks", "samples": "_samples"}


class BuildPyWithData(build_py):
    """``build_py`` plus a copy of ``pricebooks/`` and ``samples/`` (data only) into the package."""

    def run(self) -> None:
        super().run()
        for folder, inside in DATA.items():
            source = Path(__file__).resolve().parent / folder
            if not source.is_dir():  # building from an sdist that lacks them would ship a package that cannot run
                raise SystemExit(f"{folder}/ not found next to setup.py ({source})")
            target = Path(self.build_lib) / "finops_cli" / inside
            ignore = shutil.ignore_patterns("__pycache__", "*.py", "*.pyc")
            shutil.copytree(source, target, ignore=ignore, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithData})
