#!/usr/bin/env python3
"""Compile every Swift code block of README.md, Docs/*.md and the DocC catalogs' articles (Sources/*/*.docc,
Console/Sources/*/*.docc) against this checkout (`make doc-snippets`).

Each ```swift block becomes code in a scratch package (.build/doc-snippets) that depends on the checkout by path:

- A block with statements at its top level (`let`, `try`, calls...) is the `main.swift` of an executable target of
  its own, as a user would paste it into a fresh package. The document's declaration-only blocks (types, extensions)
  are compiled beside it, so later blocks may use what earlier ones declared, as the reader does.
- A document's declaration-only blocks are also compiled together in one target (a block with `@main` is that
  target's entry point).
- A block that is part of a Package.swift (it starts with `dependencies:`, `.package(`, `.target(` or
  `.executableTarget(`) is wrapped into a manifest and type-checked by `swift package dump-package`.

Context a block leaves out (a value it uses, a helper type) goes in an HTML comment right before the block, which a
reader of the rendered page does not see:

    <!-- snippet-prelude
    let path = "/etc/listr/secret"
    -->
    ```swift
    ...

Warnings count as failures, but only those in a block's own lines: the prelude and the glue lines are ours.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / ".build" / "doc-snippets"
DOCS = ([ROOT / "README.md"] + sorted((ROOT / "Docs").glob("*.md")) + sorted(ROOT.glob("Sources/*/*.docc/*.md"))
        + sorted(ROOT.glob("Console/Sources/*/*.docc/*.md")))


def doc_key(doc):
    """A document's name in target names: its stem, after its catalog's for a DocC article (Docs/GettingStarted.md and
    Chirp.docc/GettingStarted.md both exist)."""
    stem = re.sub(r"[^A-Za-z0-9]", "", doc.stem)
    if doc.parent.suffix == ".docc":
        return re.sub(r"[^A-Za-z0-9]", "", doc.parent.stem) + "Docc" + stem
    return stem

FENCE = re.compile(r"(?:<!--\s*snippet-prelude\n(?P<prelude>.*?)-->\s*\n)?```swift\n(?P<code>.*?)^```", re.S | re.M)
DECLARATION = re.compile(
    r"^(import|struct|enum|class|actor|extension|protocol|func|typealias|public|private|fileprivate|internal|"
    r"package|final|@main|@available|@preconcurrency|//|/\*|\*|\}|$)")
MANIFEST = re.compile(r"^\s*(dependencies:|\.package\(|\.target\(|\.executableTarget\(|\.product\()")
DEFAULT_IMPORTS = ["Chirp", "ChirpCommands", "ChirpLogs", "Foundation", "Logging", "ArgumentParser"]


class Block:
    def __init__(self, doc, index, code, prelude, line):
        self.doc, self.index, self.code, self.prelude, self.line = doc, index, code, prelude or "", line
        top = [l for l in code.splitlines() if l and not l[0].isspace()]
        self.is_manifest = bool(code.strip()) and (
            "import PackageDescription" in code or MANIFEST.match(code.lstrip().splitlines()[0]) is not None)
        self.is_declarations = not self.is_manifest and all(DECLARATION.match(l) for l in top)
        self.has_main = any(l.startswith("@main") for l in top)

    @property
    def name(self):
        return f"{doc_key(self.doc)}{self.index}"

    @property
    def where(self):
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks():
    for doc in DOCS:
        text = doc.read_text()
        for index, match in enumerate(FENCE.finditer(text)):
            line = text.count("\n", 0, match.start("code")) + 1
            yield Block(doc, index, match.group("code"), match.group("prelude"), line)


def imports_for(code):
    """What a snippet file imports when it says nothing itself: the libraries a reader of these docs has."""
    if re.search(r"^import ", code, re.M):
        return ""
    return "".join(f"import {name}\n" for name in DEFAULT_IMPORTS)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def source_file(block, origin):
    """A file holding `block` after its prelude; `origin` maps its lines back to the document's."""
    glue = imports_for(block.code) + block.prelude
    text = glue + ("" if glue.endswith("\n") or not glue else "\n") + block.code
    first = text.count("\n", 0, len(text) - len(block.code)) + 1
    origin.append((first, first + block.code.count("\n"), block))
    return text


def main():
    all_blocks = list(blocks())
    code_blocks = [b for b in all_blocks if not b.is_manifest]
    manifests = [b for b in all_blocks if b.is_manifest]
    print(f"doc-snippets: {len(all_blocks)} Swift blocks in {len(DOCS)} documents "
          f"({len(code_blocks)} compiled, {len(manifests)} Package.swift parts)")

    sources = SCRATCH / "Sources"
    if sources.exists():
        shutil.rmtree(sources)
    origins = {}  # file path -> [(first line, last line, block)]
    targets = []
    by_doc = {}
    for block in code_blocks:
        by_doc.setdefault(block.doc, []).append(block)
    for doc, doc_blocks in by_doc.items():
        declarations = [b for b in doc_blocks if b.is_declarations]
        shared = [b for b in declarations if not b.has_main]
        if declarations:
            name = f"{doc_key(doc)}Declarations"
            for block in declarations:
                path = sources / name / f"{block.name}.swift"
                origin = origins.setdefault(path, [])
                write(path, source_file(block, origin))
            if not any(b.has_main for b in declarations):
                write(sources / name / "main.swift", "// The declarations of this document, compiled together.\n")
            targets.append(name)
        for block in doc_blocks:
            if block.is_declarations:
                continue
            name = block.name
            path = sources / name / "main.swift"
            write(path, source_file(block, origins.setdefault(path, [])))
            for other in shared:
                other_path = sources / name / f"{other.name}.swift"
                write(other_path, imports_for(other.code) + other.prelude + "\n" + other.code)
            targets.append(name)

    products = [
        '.product(name: "Chirp", package: "chirp")',
        '.product(name: "ChirpDiscovery", package: "chirp")',
        '.product(name: "ChirpCommands", package: "chirp")',
        '.product(name: "ChirpLogs", package: "chirp")',
        '.product(name: "ChirpLogsURLSession", package: "chirp")',
        '.product(name: "ChirpFiles", package: "chirp")',
        '.product(name: "ChirpConsole", package: "Console")',  # the Console package of the checkout
        '.product(name: "Logging", package: "swift-log")',
        '.product(name: "ArgumentParser", package: "swift-argument-parser")',
        '.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")',
        '.product(name: "Metrics", package: "swift-metrics")',
    ]
    target_lines = ",\n".join(
        f'        .executableTarget(name: "{t}", dependencies: [{", ".join(products)}], '
        f'swiftSettings: [.unsafeFlags(["-warnings-as-errors"])])'
        for t in targets)
    manifest = f"""// swift-tools-version: 6.1
// Generated by scripts/doc-snippets.py: the Swift blocks of README.md, Docs/ and the DocC articles, built against this checkout.
import PackageDescription

let package = Package(
    name: "DocSnippets",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "chirp", path: "{ROOT}"),
        .package(path: "{ROOT / 'Console'}"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
    ],
    targets: [
{target_lines}
    ],
    swiftLanguageModes: [.v6]
)
"""
    write(SCRATCH / "Package.swift", manifest)

    failed = False
    swift = os.environ.get("SWIFT", "swift")
    # Built in the checkout's own build folder (.build, as `make test` builds it): the checkout and its dependencies
    # compile there with the same commands, so only the blocks compile here. The checkout is a dependency by its real
    # path and under its folder's name (the package identity): another path or name would change those commands, and
    # SwiftPM would compile the checkout again here, then again at the next build of the checkout itself.
    # A plan made afresh (--disable-build-manifest-caching): SwiftPM's cached one is the last package's built there.
    BUILD = [swift, "build", "--package-path", str(SCRATCH), "--scratch-path", str(ROOT / ".build"),
             "--disable-build-manifest-caching"]
    build = subprocess.run(BUILD, capture_output=True, text=True)
    output = build.stdout + build.stderr
    if build.returncode != 0 and not re.search(r"^" + re.escape(str(SCRATCH / "Sources")), output, re.M):
        # Errors only in the checkout's own files: an incremental build can miss source files added to the path
        # dependency since the last one (SwiftPM keeps its file list). A second build sees them.
        build = subprocess.run(BUILD, capture_output=True, text=True)
        output = build.stdout + build.stderr
    reported = set()
    for match in re.finditer(r"^(?P<file>/[^:\n]+\.swift):(?P<line>\d+):(?P<col>\d+): (?P<kind>error|warning): (?P<text>.*)$",
                             output, re.M):
        path, line = Path(match.group("file")), int(match.group("line"))
        if SCRATCH not in path.parents or (SCRATCH / "deps") in path.parents:
            continue  # a warning in the checkout's own code is not a snippet's
        for first, last, block in origins.get(path, []):
            if first <= line <= last:
                where = f"{block.doc.relative_to(ROOT)}:{block.line + line - first}"
                break
        else:
            where = f"{path.relative_to(SCRATCH)}:{line} (prelude or glue)"
        key = (where, match.group("text"))
        if key in reported:
            continue
        reported.add(key)
        failed = True
        print(f"{where}: {match.group('kind')}: {match.group('text')}")
    if build.returncode != 0 and not reported:
        print(output[-4000:])
        failed = True

    for block in manifests:
        code = block.code.strip().rstrip(",")
        package = SCRATCH / "manifests" / block.name
        if "import PackageDescription" in code:
            write(package / "Package.swift", code + "\n")
        elif code.startswith("dependencies:"):
            arguments = code
        else:
            # Targets of Chirp's own Package.swift: its dependencies come with them.
            arguments = ("dependencies: [\n"
                         '    .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),\n'
                         '    .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),\n'
                         "],\ntargets: [\n" + code + "\n]")
        if "import PackageDescription" not in code:
            write(package / "Package.swift",
                  "// swift-tools-version: 6.1\nimport PackageDescription\n\n"
                  f"let package = Package(\n    name: \"{block.name}\",\n{arguments}\n)\n")
        check = subprocess.run([swift, "package", "--package-path", str(package), "dump-package"],
                               capture_output=True, text=True)
        if check.returncode != 0:
            failed = True
            detail = (check.stderr or check.stdout).strip().splitlines()
            print(f"{block.where}: error: this Package.swift part does not compile: {' '.join(detail[:3])}")

    if failed:
        print("doc-snippets: FAILED (fix the document, or give the block the context it needs in a "
              "<!-- snippet-prelude ... --> comment right before it)")
        return 1
    print(f"doc-snippets: {len(all_blocks)} blocks compile, no warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
