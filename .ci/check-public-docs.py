#!/usr/bin/env python3
"""Fails when a public symbol of Switchboard or SwitchboardTesting has no documentation comment, or
when a top-level public type, protocol or function of Switchboard is not listed under a Topics section
of the DocC catalog (the root page or an article).

Reads the symbol graphs `swift package dump-symbol-graph` writes (run that first). Usage:
    .ci/check-public-docs.py [symbol-graph-folder]
"""
import glob
import json
import os
import re
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
folder = sys.argv[1] if len(sys.argv) > 1 else (glob.glob(os.path.join(root, ".build", "*", "symbolgraph")) or [""])[0]
graphs = [f for f in glob.glob(os.path.join(folder, "*.symbols.json"))
          if re.match(r"(Switchboard|SwitchboardTesting)(@.*)?\.symbols\.json$", os.path.basename(f))]
if not graphs:
    sys.exit(f"no Switchboard symbol graphs in {folder!r}: run `swift package dump-symbol-graph` first")

problems = []
top_level = set()
for path in sorted(graphs):
    module = os.path.basename(path).split(".")[0]
    for symbol in json.load(open(path))["symbols"]:
        if symbol.get("accessLevel") not in ("public", "open"):
            continue
        if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
            continue  # members a protocol extension gives a type: documented where they are written
        name = ".".join(symbol["pathComponents"])
        kind = symbol["kind"]["identifier"]
        if not symbol.get("docComment"):
            problems.append(f"{module}: {kind} {name} has no documentation comment")
        if module == "Switchboard" and len(symbol["pathComponents"]) == 1 and "@" not in os.path.basename(path):
            top_level.add(symbol["pathComponents"][0])

catalog = os.path.join(root, "Sources", "Switchboard", "Switchboard.docc")
curated = set()
for article in glob.glob(os.path.join(catalog, "*.md")):
    text = open(article).read()
    topics = text.split("\n## Topics", 1)
    if len(topics) == 2:
        curated.update(re.findall(r"^- ``([A-Za-z_][A-Za-z0-9_]*)", topics[1], flags=re.M))
for name in sorted(top_level - curated):
    problems.append(f"Switchboard: {name} is not listed under Topics on the root page or an article")

for problem in problems:
    print(problem)
if problems:
    sys.exit(f"{len(problems)} documentation problem(s)")
print(f"{len(graphs)} symbol graphs: every public symbol documented, all {len(top_level)} top-level symbols curated")
