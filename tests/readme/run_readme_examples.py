#!/usr/bin/python3
"""Runs every example of README.md, so the README cannot drift from the code (ctest readme/examples).

Each fenced ```sh block runs as one bash script (set -e -o pipefail) and each ```python block with
/usr/bin/python3, in order, in one scratch directory that looks like the repository root after
./scripts/run.sh: `build` links to the build tree, `tests`, `examples`, `scripts`, `python`,
`include` to the sources. HOME is a scratch directory too, so an install example into
"$HOME/.local" stays inside it. A block preceded by the line

    <!-- readme-test: skip (REASON) -->

is not run (set-up commands, long benchmarks); the reason is required. Other fences (```text,
```json, ```cpp, ```c) are output samples or excerpts and are not run. Any block that exits
non-zero fails the test, naming the README line and showing the block's output.

usage: run_readme_examples.py --source DIR --build DIR --scratch DIR [--readme FILE] [--list]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

SKIP = re.compile(r"<!--\s*readme-test:\s*skip\s*\((.+)\)\s*-->")
RUN_LANGS = {"sh": "bash", "python": "python"}


def blocks(text):
    """(line number, language, code, skip reason or None) of every fenced block."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, lang = i + 1, m.group(2)
        prev = lines[i - 1].strip() if i > 0 else ""
        skip = SKIP.search(prev)
        if "readme-test" in prev and not skip:
            raise SystemExit("README line %d: malformed marker %r (expected "
                             "<!-- readme-test: skip (REASON) -->)" % (i, prev))
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        if j == len(lines):
            raise SystemExit("README line %d: unclosed ``` fence" % start)
        out.append((start, lang, "\n".join(lines[i + 1:j]) + "\n",
                    skip.group(1) if skip else None))
        i = j + 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--readme", default=None)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--list", action="store_true", help="print the blocks and exit")
    a = ap.parse_args()
    source, build = os.path.abspath(a.source), os.path.abspath(a.build)
    readme = a.readme or os.path.join(source, "README.md")
    with open(readme, encoding="utf-8") as f:
        found = blocks(f.read())
    runnable = [b for b in found if b[1] in RUN_LANGS]
    if a.list:
        for line, lang, code, skip in runnable:
            print("%s:%d %s%s" % (os.path.basename(readme), line, lang,
                                  " (skip: %s)" % skip if skip else ""))
            print("  " + code.rstrip().replace("\n", "\n  "))
        return 0

    scratch = os.path.abspath(a.scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(os.path.join(scratch, "home"))
    os.symlink(build, os.path.join(scratch, "build"))
    for d in ("tests", "examples", "scripts", "python", "include", "benchmarks"):
        if os.path.exists(os.path.join(source, d)):
            os.symlink(os.path.join(source, d), os.path.join(scratch, d))
    env = dict(os.environ)
    env["HOME"] = os.path.join(scratch, "home")
    for v in ("PYTHONPATH", "LD_LIBRARY_PATH", "GRAPHI_PASSES"):
        env.pop(v, None)

    ran = skipped = 0
    for line, lang, code, skip in runnable:
        where = "%s:%d" % (os.path.basename(readme), line)
        if skip:
            print("skip %s (%s)" % (where, skip))
            skipped += 1
            continue
        if lang == "sh":
            cmd = ["bash", "-e", "-o", "pipefail", "-c", code]
        else:
            cmd = ["/usr/bin/python3", "-c", code]
        block_env = dict(env)
        if lang == "python":  # the README says: PYTHONPATH=build/python /usr/bin/python3
            block_env["PYTHONPATH"] = os.path.join(scratch, "build", "python")
        print("run  %s: %s" % (where, code.strip().split("\n")[0]), flush=True)
        try:
            r = subprocess.run(cmd, cwd=scratch, env=block_env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=a.timeout)
            rc, output = r.returncode, r.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            rc, output = "timeout after %.0f s" % a.timeout, (e.stdout or b"").decode(errors="replace")
        if rc != 0:
            print("FAILED %s (exit %s): the README example\n%s\nprinted:\n%s" %
                  (where, rc, code.rstrip(), output[-4000:]))
            return 1
        ran += 1
    if ran == 0:
        print("no README example ran: is the README's ```sh fence syntax intact?")
        return 1
    print("readme examples: %d ran, %d skipped (marked), all passed" % (ran, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
