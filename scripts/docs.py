#!/usr/bin/env python3
"""Writes the guides of docs/ (and the README) into the DocC catalogs as articles, so that
`make docs` publishes the same text as the Markdown guides: one source, two forms.

    python3 scripts/docs.py        # then: swift package generate-documentation …

Each guide goes to the catalog of the module it is about (see GUIDES); links between guides
become DocC links, other links to files of the repository become plain text (the site has no
such pages). The articles land in Sources/<Module>/<Module>.docc/Guides/, which git ignores.
"""
import os
import re
import shutil
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# source (relative to the repository) -> (module, article name[, section to cut out])
GUIDES = {
    "README.md": ("Salvo", "GettingStarted"),
    "docs/typed-layer.md": ("Salvo", "TypedLayer"),
    "docs/typed-layer.md#caching": ("Salvo", "Caching"),
    "docs/performance.md": ("Salvo", "Performance"),
    "docs/performance-fast-paths.md": ("Salvo", "FastPaths"),
    "docs/performance-typed.md": ("Salvo", "PerformanceTyped"),
    "docs/performance-api-path.md": ("Salvo", "APIPath"),
    "docs/reliability.md": ("Salvo", "Reliability"),
    "docs/declarative.md": ("SalvoMacros", "Declarative"),
    "docs/architecture.md": ("SalvoCore", "Architecture"),
    "docs/http-semantics.md": ("SalvoCore", "HTTPSemantics"),
    "docs/tls.md": ("SalvoCore", "TLS"),
    "docs/http2.md": ("SalvoCore", "HTTP2"),
    "docs/prepared-calls.md": ("SalvoCore", "PreparedCalls"),
    "docs/load-testing.md": ("SalvoLoad", "LoadTesting"),
    "docs/scripted-load.md": ("SalvoLoad", "ScriptedLoad"),
    "docs/distributed-load.md": ("SalvoLoad", "DistributedLoad"),
    "docs/openapi.md": ("SalvoOpenAPI", "OpenAPI"),
    "docs/observability.md": ("SalvoObservability", "ObservabilityGuide"),
}


def section(text, anchor):
    """The `## ` section whose heading makes `anchor`, as an article of its own."""
    lines = text.split("\n")
    out, inside = [], False
    for line in lines:
        if line.startswith("## "):
            if inside:
                break
            slug = re.sub(r"[^a-z0-9 -]", "", line[3:].lower()).strip().replace(" ", "-")
            inside = slug.startswith(anchor)
            if inside:
                out.append("# " + line[3:])
                continue
        elif inside:
            # One level up: the section's subsections are the article's sections.
            out.append(line[1:] if line.startswith("### ") else line)
    if not out:
        sys.exit(f"docs.py: no section #{anchor}")
    return "\n".join(out)


def relink(text, module):
    """Links to other guides as DocC links; links to other files as their text."""
    def replace(match):
        label, target = match.group(1), match.group(2)
        if target.startswith(("http://", "https://", "mailto:", "#")):
            return match.group(0)
        path, _, anchor = target.partition("#")
        path = os.path.normpath(path.replace("docs/", "")) if path else ""
        for source, (other, article, *_rest) in GUIDES.items():
            source_path, _, source_anchor = source.partition("#")
            if os.path.basename(source_path) == os.path.basename(path) and (not source_anchor or source_anchor == anchor):
                # Within a catalog a DocC link; across catalogs the text (each module's site
                # is its own).
                return f"[{label}](doc:{article})" if other == module else label
        return label
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", replace, text)


def main():
    written = 0
    catalogs = set()
    for source, (module, article) in GUIDES.items():
        path, _, anchor = source.partition("#")
        with open(os.path.join(REPO, path), encoding="utf-8") as f:
            text = f.read()
        if anchor:
            text = section(text, anchor)
        if path == "README.md":
            text = re.sub(r"^# Salvo\b.*", "# Getting started", text, count=1, flags=re.M)
        text = relink(text, module)
        directory = os.path.join(REPO, "Sources", module, f"{module}.docc", "Guides")
        if directory not in catalogs:
            shutil.rmtree(directory, ignore_errors=True)
            os.makedirs(directory)
            catalogs.add(directory)
        with open(os.path.join(directory, article + ".md"), "w", encoding="utf-8") as f:
            f.write(text)
        written += 1
    print(f"docs.py: {written} articles written into {len(catalogs)} catalogs")


if __name__ == "__main__":
    main()
