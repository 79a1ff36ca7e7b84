import { describe, expect, it } from "vitest";
import { definitionAt, pythonDefinitions, withoutDefinitions } from "../../../pipeline/changes/python-definitions.ts";

/** A test file as real projects write them: decorators over several lines, a class of tests, a string holding code at column 0, comments between tests. */
const FILE = [
  "import pytest", // 1
  "", // 2
  "", // 3
  "@pytest.mark.parametrize(", // 4
  '    "value", [', // 5
  "        1,", // 6
  "])", // 7
  "def test_values(value):", // 8
  "    def helper():  # nested: not a definition of the file", // 9
  "        return value", // 10
  "", // 11
  "    assert helper() == value", // 12
  "", // 13
  "", // 14
  "# The next test writes a module.", // 15
  "def test_source(tmp_path):", // 16
  '    source = """', // 17
  "def test_inside_a_string():", // 18
  "    pass", // 19
  '"""', // 20
  "    total = (1 +", // 21
  "2)", // 22
  "    assert source and total", // 23
  "", // 24
  "", // 25
  "class TestShapes:", // 26
  '    """Shapes."""', // 27
  "", // 28
  "    @staticmethod", // 29
  "    def test_square():", // 30
  "        assert True", // 31
  "", // 32
  "    def test_circle(self):", // 33
  "        assert True", // 34
  "", // 35
  "", // 36
  "def test_last():", // 37
  "    x = 1 + \\", // 38
  "2", // 39
  "    assert x == 3", // 40
  "", // 41
].join("\n");

describe("the definitions of a Python file", () => {
  it("are its top-level defs and classes and its classes' methods, each from its first decorator to its body's last line", () => {
    expect(pythonDefinitions(FILE).map((d) => [d.qualifiedName, d.kind, d.start, d.end])).toEqual([
      ["test_values", "def", 4, 12],
      ["test_source", "def", 16, 23],
      ["TestShapes", "class", 26, 34],
      ["TestShapes.test_square", "def", 29, 31],
      ["TestShapes.test_circle", "def", 33, 34],
      ["test_last", "def", 37, 40],
    ]);
  });

  it("place a line in its innermost definition, and a line between definitions in none", () => {
    const definitions = pythonDefinitions(FILE);
    expect(definitionAt(definitions, 31)?.qualifiedName).toBe("TestShapes.test_square");
    expect(definitionAt(definitions, 27)?.qualifiedName).toBe("TestShapes");
    expect(definitionAt(definitions, 18)?.qualifiedName).toBe("test_source");
    expect(definitionAt(definitions, 15)).toBeUndefined();
    expect(definitionAt(definitions, 1)).toBeUndefined();
  });

  it("are taken out by name with the blank lines after them, a class with its methods, a name the file lacks passed over", () => {
    const { text, removed } = withoutDefinitions(FILE, new Set(["test_values", "TestShapes", "TestShapes.test_circle", "test_gone"]));
    expect(removed).toEqual(["test_values", "TestShapes"]);
    expect(text).toBe(
      ["import pytest", "", "", "# The next test writes a module.", ...FILE.split("\n").slice(15, 25), ...FILE.split("\n").slice(36)].join("\n"),
    );
    expect(pythonDefinitions(text).map((d) => d.qualifiedName)).toEqual(["test_source", "test_last"]);
  });

  it("take out one method and leave its class and the other methods", () => {
    const { text } = withoutDefinitions(FILE, new Set(["TestShapes.test_square"]));
    expect(pythonDefinitions(text).map((d) => d.qualifiedName)).toEqual(["test_values", "test_source", "TestShapes", "TestShapes.test_circle", "test_last"]);
    expect(text).toContain('    """Shapes."""\n\n    def test_circle(self):');
  });
});
