#!/usr/bin/env python3
"""Fails when a locked dependency needs a newer Rust than the workspace declares.

Reads `cargo metadata --format-version 1 --locked` (no toolchain is downloaded, no build runs)
for one feature set (npy-serde's features, or `package/feature` for another member such as
npy-cli, the `npy` tool), walks the resolved graph from the workspace's crates
along normal and build dependencies (dev-dependencies build only the tests), and compares every
reached package's `rust-version` with the declared minimum.

Feature sets:
- the default features plus `complex,ndarray,chrono,jiff` (and every member's default features,
  the `npy` tool's included) must build on the workspace's `rust-version` (root Cargo.toml);
- each entry of `[workspace.metadata.msrv]` in the root Cargo.toml, `"feature,list" = "1.NN"`,
  declares a newer minimum for a feature set (heavy optional features);
- or ad hoc: `msrv-check.py --features arrow --msrv 1.94`.

Exit status 1 lists every offending package with the path that reaches it.
"""
import argparse
import json
import subprocess
import sys

BASE_FEATURES = "complex,ndarray,chrono,jiff"
PACKAGE = "npy-serde"


def version(v):
    parts = [int(p) for p in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def metadata(features):
    cmd = ["cargo", "metadata", "--format-version", "1", "--locked", "--quiet"]
    if features:
        cmd += ["--features", ",".join(f if "/" in f else f"{PACKAGE}/{f}"
                                       for f in features.split(",") if f)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def walk(nodes, roots):
    """Every package reached from `roots` along normal and build dependencies, each with the
    package it was reached from."""
    via = {m: None for m in roots}
    todo = list(roots)
    while todo:
        pid = todo.pop()
        for dep in nodes[pid]["deps"]:
            if not any(k["kind"] in (None, "build") for k in dep["dep_kinds"]):
                continue
            if dep["pkg"] not in via:
                via[dep["pkg"]] = pid
                todo.append(dep["pkg"])
    return via


def check(features, msrv):
    """Returns the problems for this feature set: with `msrv`, every package reached from the
    workspace's members against it; without, each member's graph against the member's own
    `rust-version` (the format crate and the tool declare the workspace's, npy-datafusion
    DataFusion's)."""
    meta = metadata(features)
    packages = {p["id"]: p for p in meta["packages"]}
    members = sorted(meta["workspace_members"])
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    roots = [([m for m in members], msrv)] if msrv else [
        ([m], packages[m]["rust_version"]) for m in members]
    problems, reached = set(), set()
    for start, declared in roots:
        if not declared:
            problems.add(f"{packages[start[0]]['name']} declares no rust-version")
            continue
        via = walk(nodes, start)
        reached |= set(via)
        for pid in via:
            if pid in members:
                continue
            p = packages[pid]
            need = p.get("rust_version")
            if need and version(need) > version(declared):
                path, at = [], pid
                while at is not None:
                    path.append(f"{packages[at]['name']} {packages[at]['version']}")
                    at = via[at]
                problems.add(f"{p['name']} {p['version']} needs Rust {need}, more than "
                             f"{declared} (via " + " <- ".join(path) + ")")
    label = msrv or "each member's rust-version"
    return sorted(problems), label, len(reached)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--features", help="npy-serde features, or package/feature (comma-separated), "
                    "to check alone")
    ap.add_argument("--msrv", help="the minimum Rust declared for --features")
    args = ap.parse_args()
    if args.features is not None or args.msrv:
        sets = [(args.features or "", args.msrv)]
    else:
        ws = metadata(BASE_FEATURES).get("metadata") or {}
        sets = [(BASE_FEATURES, None)]
        sets += [(f, v) for f, v in (ws.get("msrv") or {}).items()]
    failed = False
    for features, msrv in sets:
        problems, declared, n = check(features, msrv)
        label = features or "default"
        if problems:
            failed = True
            print(f"MSRV {declared} with features [{label}]: {len(problems)} of {n} crates need more:")
            for p in problems:
                print("  " + p)
        else:
            print(f"MSRV {declared} with features [{label}]: all {n} crates agree")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
