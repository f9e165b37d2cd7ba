"""The build backend of this package (PEP 517), so that `pip install` needs nothing it may not
reach: no setuptools, no wheel, no index. It writes the wheel of the two modules, chaoskit.py
and pytest_chaoskit.py, with the pytest11 entry point that makes pytest load the plugin, and an
sdist; pip finds it through pyproject.toml's backend-path. It uses the standard library only.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "chaoskit"
VERSION = "0.1.0"
MODULES = ("chaoskit.py", "pytest_chaoskit.py")
SDIST_FILES = MODULES + ("chaoskit_build.py", "pyproject.toml", "README.md")
HERE = os.path.dirname(os.path.abspath(__file__))
DIST_INFO = "%s-%s.dist-info" % (NAME, VERSION)
WHEEL_NAME = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
ENTRY_POINTS = "[pytest11]\npytest_chaoskit = pytest_chaoskit\n"
WHEEL = "Wheel-Version: 1.0\nGenerator: chaoskit_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
EPOCH = (1980, 1, 1, 0, 0, 0)  # a fixed time in the archives, so that a build is the same every time


def _metadata():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: chaoskit's process protocol client, and a pytest plugin that runs chaoskit campaigns as tests\n"
            "Home-page: https://github.com/chaoskit/chaoskit\nRequires-Python: >=3.8\n"
            "Description-Content-Type: text/markdown\n\n%s" % (NAME, VERSION, readme))


def _dist_info():
    """The .dist-info files but RECORD, by name."""
    return {"METADATA": _metadata(), "WHEEL": WHEEL, "entry_points.txt": ENTRY_POINTS}


def _write_wheel(directory, files):
    """Writes a wheel of files (archive name to bytes) and its RECORD to directory."""
    record = []
    path = os.path.join(directory, WHEEL_NAME)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            z.writestr(zipfile.ZipInfo(name, EPOCH), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
        record.append("%s/RECORD,," % DIST_INFO)
        z.writestr(zipfile.ZipInfo("%s/RECORD" % DIST_INFO, EPOCH), "\n".join(record) + "\n")
    return WHEEL_NAME


def _read(name):
    with open(os.path.join(HERE, name), "rb") as f:
        return f.read()


def _with_dist_info(files):
    return files + [("%s/%s" % (DIST_INFO, n), t.encode()) for n, t in _dist_info().items()]


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    os.makedirs(os.path.join(metadata_directory, DIST_INFO), exist_ok=True)
    for name, text in _dist_info().items():
        with open(os.path.join(metadata_directory, DIST_INFO, name), "w", encoding="utf-8") as f:
            f.write(text)
    return DIST_INFO


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _with_dist_info([(m, _read(m)) for m in MODULES]))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel that puts this directory on sys.path (a .pth file), so that edits here take effect."""
    return _write_wheel(wheel_directory, _with_dist_info([("%s.pth" % NAME, (HERE + "\n").encode())]))


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, VERSION)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    files = [(f, _read(f)) for f in SDIST_FILES] + [("PKG-INFO", _metadata().encode())]
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files:
            info = tarfile.TarInfo("%s/%s" % (base, name))
            info.size, info.mtime, info.mode = len(data), 315532800, 0o644  # EPOCH, in UTC
            tar.addfile(info, io.BytesIO(data))
    return base + ".tar.gz"
