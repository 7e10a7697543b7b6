"""The runner package's modules import each other without a circle, function-level imports included.

A circle held together by imports inside functions works until someone moves one of them to the top of its
module; then one side sees the other half-initialised. Read from the source (ast), so nothing heavy is imported.
"""

import ast
import os
import unittest
from typing import Dict, List, Set

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "remote_finetune")
NAME = "remote_finetune"


def _imported(node: ast.AST, modules: Set[str]) -> Set[str]:
    """The package's modules one import statement names: `from . import x`, `from .x import y`,
    `from remote_finetune.x import y`, `import remote_finetune.x`."""
    names: Set[str] = set()
    if isinstance(node, ast.ImportFrom):
        parts = (node.module or "").split(".") if node.module else []
        if node.level == 1 or (node.level == 0 and parts[:1] == [NAME]):
            rest = parts if node.level == 1 else parts[1:]
            if rest:
                names.add(rest[0])
            else:
                names.update(a.name for a in node.names)
    elif isinstance(node, ast.Import):
        for a in node.names:
            parts = a.name.split(".")
            if parts[0] == NAME and len(parts) > 1:
                names.add(parts[1])
    return names & modules


def import_graph(package_dir: str) -> Dict[str, List[str]]:
    modules = {f[:-3] for f in os.listdir(package_dir) if f.endswith(".py")}
    graph: Dict[str, List[str]] = {}
    for m in sorted(modules):
        with open(os.path.join(package_dir, m + ".py"), encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=m + ".py")
        deps: Set[str] = set()
        for node in ast.walk(tree):
            deps |= _imported(node, modules)
        graph[m] = sorted(deps - {m})
    return graph


def cycles(graph: Dict[str, List[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return sorted(found)


class ImportCycles(unittest.TestCase):
    def test_the_runner_package_has_no_import_circle(self):
        graph = import_graph(PACKAGE)
        self.assertIn("trainer", graph)
        found = cycles(graph)
        self.assertEqual(found, [], "modules of remote_finetune that import each other in a circle: %s" % "; ".join(
            " <-> ".join(c) for c in found))

    def test_the_check_finds_a_circle_through_a_function_level_import(self):
        # The circle this test was written for: evaluate imported trainer's data loading, trainer imported evaluate.
        import tempfile
        d = tempfile.mkdtemp(prefix="rft-cycles-")
        with open(os.path.join(d, "a.py"), "w", encoding="utf-8") as f:
            f.write("def f():\n    from .b import g\n")
        with open(os.path.join(d, "b.py"), "w", encoding="utf-8") as f:
            f.write("from remote_finetune import a\n")
        with open(os.path.join(d, "c.py"), "w", encoding="utf-8") as f:
            f.write("import os\nfrom . import a\n")
        self.assertEqual(cycles(import_graph(d)), [["a", "b"]])


if __name__ == "__main__":
    unittest.main()
