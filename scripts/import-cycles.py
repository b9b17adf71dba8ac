#!/usr/bin/env python3
"""Finds circles of imports between source files in the workspace.

Every path a file names inside its own crate (`crate::`, `super::`,
`self::`, in `use` trees and in expressions) is resolved to the file that
holds the module it reaches; the files and those edges form a graph, and
each strongly connected component of more than one file is a circle: a set
of files that import one another and cannot be read or changed alone.

Usage: scripts/import-cycles.py [--max-files N] [CRATES_DIR]

Prints each component (largest first) with its size; exits 1 when one is
larger than N files (default: report only). A file's `#[cfg(test)] mod
tests { use super::*; }` counts: the tests of a module reaching back into
it is normal, and a two-file circle (a parent and its child) is therefore
common and harmless; the rule we keep is no circle of more than three.
"""

import os
import re
import sys
from collections import defaultdict

PATH_START = re.compile(r"\b(crate|super|self)((?:::(?:[A-Za-z_][A-Za-z0-9_]*|\{))+)")
COMMENT = re.compile(r"//[^\n]*")
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def module_files(source_root):
    """Maps each module path (a tuple of names) to its file."""
    modules = {}
    for directory, _, names in os.walk(source_root):
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, source_root)[:-3].split(os.sep)
            if relative[-1] in ("mod", "lib", "main"):
                relative = relative[:-1]
            if relative and relative[0] == "bin":
                continue
            modules[tuple(relative)] = path
    return modules


def module_of(path, source_root):
    relative = os.path.relpath(path, source_root)[:-3].split(os.sep)
    is_directory_module = relative[-1] in ("mod", "lib", "main")
    if is_directory_module:
        relative = relative[:-1]
    return tuple(relative), is_directory_module


def expand_use_tree(text):
    """Yields the simple paths of a use tree such as `a::{b, c::{d, E}}`."""
    text = re.sub(r"\s+", "", text)

    def split_top(inner):
        depth, start, parts = 0, 0, []
        for index, character in enumerate(inner):
            if character == "{":
                depth += 1
            elif character == "}":
                depth -= 1
            elif character == "," and depth == 0:
                parts.append(inner[start:index])
                start = index + 1
        parts.append(inner[start:])
        return [part for part in parts if part]

    def expand(prefix, tree):
        brace = tree.find("{")
        if brace == -1:
            yield prefix + tree
            return
        head, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
        for part in split_top(inner):
            yield from expand(prefix + head, part)

    yield from expand("", text)


def reexports(path, module, modules):
    """The names `path` (module `module`) re-exports with `pub use`, each
    mapped to the path it re-exports."""
    with open(path, encoding="utf-8") as handle:
        text = STRING.sub('""', COMMENT.sub("", handle.read()))
    found = {}
    for use in re.finditer(r"\bpub(?:\([a-z]+\))?\s+use\s+([^;]*);", text):
        for simple in expand_use_tree(use.group(1)):
            names = [name for name in simple.split("::") if name]
            if not names or names[-1] == "*":
                continue
            last = names[-1]
            exported = last.split(" as ")[-1]
            names[-1] = last.split(" as ")[0]
            if names[0] not in ("crate", "super", "self"):
                names = ["self"] + names
            found[exported] = names
    return found


REEXPORTS = {}


def resolve(names, current, is_directory_module, modules, depth=0):
    """The module a path names: the longest known module prefix, and
    through a re-export to the module that defines the item."""
    target = resolve_prefix(names, current, modules)
    if depth > 8 or target not in modules:
        return target
    consumed = consumed_names(names, current, target)
    if consumed is None or consumed >= len(names):
        return target
    item = names[consumed]
    path = modules[target]
    if path not in REEXPORTS:
        REEXPORTS[path] = reexports(path, target, modules)
    if item in REEXPORTS[path]:
        return resolve(REEXPORTS[path][item], target, True, modules, depth + 1)
    return target


def consumed_names(names, current, target):
    """How many names of `names` lead to `target`."""
    base = list(current)
    position = 0
    if names[0] == "crate":
        base, position = [], 1
    elif names[0] == "self":
        position = 1
    while position < len(names) and names[position] == "super":
        base = base[:-1]
        position += 1
    extra = len(target) - len(base)
    if extra < 0:
        return None
    return position + extra


def resolve_prefix(names, current, modules):
    """The module tuple a path names, taken as the longest known prefix."""
    base = list(current)
    # In a file `a/b.rs` (module a::b), `super` is `a`; in `a/b/mod.rs`
    # too: the module is the directory's.
    position = 0
    if names[0] == "crate":
        base = []
        position = 1
    elif names[0] == "self":
        position = 1
    while position < len(names) and names[position] == "super":
        base = base[:-1]
        position += 1
    rest = [name for name in names[position:] if name not in ("*", "self")]
    best = tuple(base)
    for length in range(1, len(rest) + 1):
        candidate = tuple(base + rest[:length])
        if candidate in modules:
            best = candidate
    return best


INLINE_MODULE = re.compile(r"\bmod\s+[A-Za-z_][A-Za-z0-9_]*\s*\{")


def inline_module_depths(text):
    """For each character, how many inline `mod name { ... }` blocks (a
    file's `mod tests`) enclose it: a `super` there first leaves those."""
    starts = {match.end() - 1 for match in INLINE_MODULE.finditer(text)}
    depths, stack, depth = [0] * len(text), [], 0
    for position, character in enumerate(text):
        if character == "{":
            is_module = position in starts
            stack.append(is_module)
            depth += is_module
        elif character == "}" and stack:
            depth -= stack.pop()
        depths[position] = depth
    return depths


def without_inline_supers(names, depth):
    """`names` with the `super`s that only leave inline modules dropped."""
    names, dropped = list(names), False
    while depth > 0 and names and names[0] == "super":
        names, depth, dropped = names[1:], depth - 1, True
    if dropped and (not names or names[0] != "super"):
        names = ["self"] + names
    return names


def edges_of(path, source_root, modules):
    current, is_directory_module = module_of(path, source_root)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    text = STRING.sub('""', COMMENT.sub("", text))
    depths = inline_module_depths(text)
    found = set()
    for use in re.finditer(r"(\bpub(?:\([a-z:]+\))?\s+)?\buse\s+([A-Za-z_][^;]*);", text):
        if use.group(1):
            # A re-export is not a use: paths through it are followed to
            # the file that defines the item (`resolve`).
            continue
        for simple in expand_use_tree(use.group(2)):
            names = [name for name in simple.split("::") if name]
            names = without_inline_supers(names, depths[use.start()])
            if names and names[0] not in ("crate", "super", "self"):
                # A path from a child module (`use batch::Writer` in a
                # `mod.rs`); paths into other crates resolve to nothing.
                if current + (names[0],) not in modules:
                    continue
                names = ["self"] + names
            names = [name.split(" as ")[0] for name in names]
            target = resolve(names, current, is_directory_module, modules)
            found.add(target)
    for match in PATH_START.finditer(text):
        names = [match.group(1)] + [name for name in match.group(2).split("::") if name and name != "{"]
        names = without_inline_supers(names, depths[match.start()])
        target = resolve(names, current, is_directory_module, modules)
        found.add(target)
    return {modules[target] for target in found if target in modules and modules[target] != path}


def strongly_connected(graph):
    index_of, low, stack, on_stack, components = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(100000)

    def visit(node):
        index_of[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for successor in graph.get(node, ()):
            if successor not in index_of:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index_of[successor])
        if low[node] == index_of[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(component)

    for node in list(graph):
        if node not in index_of:
            visit(node)
    return components


def main():
    arguments = sys.argv[1:]
    files_max = None
    if arguments[:1] == ["--max-files"]:
        files_max = int(arguments[1])
        arguments = arguments[2:]
    crates_directory = arguments[0] if arguments else "crates"
    circles = []
    for crate in sorted(os.listdir(crates_directory)):
        source_root = os.path.join(crates_directory, crate, "src")
        if not os.path.isdir(source_root):
            continue
        modules = module_files(source_root)
        graph = defaultdict(set)
        for path in modules.values():
            graph[path] = edges_of(path, source_root, modules)
        circles.extend(c for c in strongly_connected(graph) if len(c) > 1)
    circles.sort(key=len, reverse=True)
    for circle in circles:
        print(f"{len(circle)} files: " + " ".join(sorted(circle)))
    largest = len(circles[0]) if circles else 1
    print(f"largest circle: {largest} files")
    if files_max is not None and largest > files_max:
        sys.exit(1)


if __name__ == "__main__":
    main()
