"""Makes a prepared checkout (the base revision, with what its install generated) match a run's checkout.

    sync.py list DIR                     every file and link under DIR (.git left out), one JSON string a line
    sync.py overlay SRC DST BASEFILES    DST := SRC's files over DST; base files SRC lacks are removed
    sync.py compile DIR...               byte-compile every Python file under each DIR, once, at build

Files the install generated in DST (a version module, an egg-info directory, a compiled
extension) are kept: they are in neither list. Runs with any Python 3 the environment has.
"""
import compileall
import json
import os
import shutil
import sys


def entries(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not (dirpath == root and d == ".git"))
        # a link to a directory is an entry of its own, never followed
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            yield os.path.relpath(os.path.join(dirpath, name), root)
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]


def remove(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def place(src, dst):
    parent = os.path.dirname(dst)
    # a file standing where a directory is now needed goes first
    probe = parent
    missing = []
    while probe and not os.path.isdir(probe):
        missing.append(probe)
        probe = os.path.dirname(probe)
    for path in reversed(missing):
        if os.path.lexists(path):
            remove(path)
        os.mkdir(path)
    if os.path.lexists(dst) and (os.path.isdir(dst) and not os.path.islink(dst)):
        shutil.rmtree(dst)
    if os.path.islink(src):
        if os.path.lexists(dst):
            os.unlink(dst)
        os.symlink(os.readlink(src), dst)
    else:
        if os.path.islink(dst):
            os.unlink(dst)
        shutil.copyfile(src, dst)
        shutil.copymode(src, dst)


def compile_tree(root):
    """Byte-code beside every module, checked against its source's hash rather than its mtime.

    Test runs write none (PYTHONDONTWRITEBYTECODE), so without this every run compiles pytest and
    the project from source again: about half of a small run's time. A hash, not an mtime: the
    overlay rewrites every file of the checkout, and a changed one must never use stale code.
    Files that do not compile on this Python (Python 2 sources among a package's data) are left
    as they are; Python never imports them."""
    mode = getattr(getattr(compileall, "py_compile", None), "PycInvalidationMode", None)
    if mode is None:  # Python < 3.7 has no hash-checked byte-code: leave the tree uncompiled
        return
    compileall.compile_dir(root, quiet=2, invalidation_mode=mode.CHECKED_HASH)


def main(argv):
    if argv[1] == "list":
        for rel in entries(argv[2]):
            sys.stdout.write(json.dumps(rel) + "\n")
        return 0
    if argv[1] == "overlay":
        src, dst, base_list = argv[2], argv[3], argv[4]
        with open(base_list, encoding="utf-8") as handle:
            base = [json.loads(line) for line in handle if line.strip()]
        for rel in base:
            if not os.path.lexists(os.path.join(src, rel)) and os.path.lexists(os.path.join(dst, rel)):
                remove(os.path.join(dst, rel))
        for rel in entries(src):
            place(os.path.join(src, rel), os.path.join(dst, rel))
        return 0
    if argv[1] == "compile":
        for root in argv[2:]:
            compile_tree(root)
        return 0
    sys.stderr.write("usage: sync.py list DIR | overlay SRC DST BASEFILES | compile DIR...\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
