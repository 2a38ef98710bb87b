/**
 * Checks the TSDoc of every public export: each entry point listed in typedoc.json is loaded into
 * one TypeScript program, every exported symbol is resolved to its declaration (through
 * re-exports), and its doc comment is checked:
 *
 * - every export has a description;
 * - functions, classes and constants (values) have an `@example`;
 * - every property of an interface or type alias named `…Options` has a description, and every
 *   optional one states its default (`@defaultValue`, or the word "default" in its description);
 * - other interfaces and types need a description only.
 *
 * Failures are listed as `entry: symbol (file:line): what is missing`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Exports exempt from the checks, by name, each with the reason. Keep this small: only purely
 * structural helper types belong here.
 */
const ALLOWLIST: ReadonlyMap<string, string> = new Map<string, string>([
  // (none yet)
]);

/** One resolved export and the entry points that expose it. */
interface Checked {
  name: string;
  symbol: ts.Symbol;
  entries: string[];
}

function entryPoints(): string[] {
  const config = JSON.parse(readFileSync(resolve(root, 'typedoc.json'), 'utf8')) as {
    entryPoints?: unknown;
  };
  if (!Array.isArray(config.entryPoints) || config.entryPoints.length === 0) {
    throw new Error('typedoc.json: `entryPoints` must be a non-empty array');
  }
  return config.entryPoints.map(String);
}

function createProgram(files: string[]): ts.Program {
  const configPath = resolve(root, 'tsconfig.json');
  const read = ts.readConfigFile(configPath, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, root, undefined, configPath);
  return ts.createProgram({
    rootNames: files.map((f) => resolve(root, f)),
    options: { ...parsed.options, noEmit: true },
  });
}

/** The JSDoc blocks attached to a declaration (for a variable, those of its statement). */
function docsOf(decl: ts.Node): ts.JSDoc[] {
  return ts.getJSDocCommentsAndTags(decl).filter(ts.isJSDoc);
}

function commentText(comment: ts.JSDoc['comment'] | ts.JSDocTag['comment']): string {
  return (ts.getTextOfJSDocComment(comment) ?? '').trim();
}

function description(decls: readonly ts.Node[]): string {
  return decls
    .flatMap(docsOf)
    .map((doc) => commentText(doc.comment))
    .join(' ')
    .trim();
}

function tags(decls: readonly ts.Node[], name: string): ts.JSDocTag[] {
  return decls
    .flatMap(docsOf)
    .flatMap((doc) => doc.tags ?? [])
    .filter((tag) => tag.tagName.text === name);
}

function where(decl: ts.Node): string {
  const file = decl.getSourceFile();
  const { line } = file.getLineAndCharacterOfPosition(decl.getStart(file));
  return `${relative(root, file.fileName)}:${line + 1}`;
}

function isLibrary(decl: ts.Node): boolean {
  const file = decl.getSourceFile();
  return file.isDeclarationFile || file.fileName.includes('/node_modules/');
}

const VALUE =
  ts.SymbolFlags.Function | ts.SymbolFlags.Class | ts.SymbolFlags.Variable | ts.SymbolFlags.Enum;
const TYPE = ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias;

/** The properties of an options type, across every member of a union. */
function optionProperties(checker: ts.TypeChecker, symbol: ts.Symbol): ts.Symbol[] {
  const type = checker.getDeclaredTypeOfSymbol(symbol);
  const members = type.isUnion() ? type.types : [type];
  const seen = new Set<ts.Symbol>();
  for (const member of members) {
    for (const property of checker.getPropertiesOfType(member)) seen.add(property);
  }
  return [...seen];
}

/** The name of the interface or type alias that declares a property (for inherited ones). */
function ownerName(decl: ts.Node, fallback: string): string {
  for (let node: ts.Node | undefined = decl.parent; node; node = node.parent) {
    if ((ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) && node.name) {
      return node.name.text;
    }
  }
  return fallback;
}

function findings(checker: ts.TypeChecker, item: Checked, seenProperties: Set<ts.Node>): string[] {
  const { symbol, name } = item;
  const decls = (symbol.declarations ?? []).filter((d) => !isLibrary(d));
  const entry = item.entries.join(', ');
  if (decls.length === 0) return [];
  const at = where(decls[0]!);
  const out: string[] = [];
  const report = (what: string, loc = at, label = name) =>
    out.push(`${entry}: ${label} (${loc}): ${what}`);

  if (description(decls) === '') report('missing description');
  if (symbol.flags & VALUE) {
    const examples = tags(decls, 'example');
    if (examples.length === 0) report('missing @example');
    else if (examples.some((tag) => commentText(tag.comment) === '')) report('empty @example');
  }
  if (symbol.flags & TYPE && name.endsWith('Options')) {
    for (const property of optionProperties(checker, symbol)) {
      const pdecls = (property.declarations ?? []).filter((d) => !isLibrary(d));
      // an inherited property is reported once, under the type that declares it
      if (pdecls.length === 0 || pdecls.some((d) => seenProperties.has(d))) continue;
      for (const d of pdecls) seenProperties.add(d);
      const label = `${ownerName(pdecls[0]!, name)}.${property.name}`;
      const ploc = where(pdecls[0]!);
      const text = description(pdecls);
      if (text === '') report('property missing description', ploc, label);
      if (property.flags & ts.SymbolFlags.Optional) {
        const hasDefault =
          tags(pdecls, 'defaultValue').some((tag) => commentText(tag.comment) !== '') ||
          /default/i.test(text);
        if (!hasDefault) report('optional property missing @defaultValue', ploc, label);
      }
    }
  }
  return out;
}

function collect(): { checked: Checked[]; missing: string[]; checker?: ts.TypeChecker } {
  const entries = entryPoints();
  const missing = entries.filter((e) => !existsSync(resolve(root, e)));
  if (missing.length > 0) return { checked: [], missing };
  const program = createProgram(entries);
  const checker = program.getTypeChecker();
  const bySymbol = new Map<ts.Symbol, Checked>();
  for (const entry of entries) {
    const file = program.getSourceFile(resolve(root, entry));
    if (file === undefined) throw new Error(`${entry}: not loaded by the TypeScript program`);
    const module = checker.getSymbolAtLocation(file);
    if (module === undefined) throw new Error(`${entry}: not a module (no exports)`);
    for (const exported of checker.getExportsOfModule(module)) {
      const target =
        exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const known = bySymbol.get(target);
      if (known) {
        if (!known.entries.includes(entry)) known.entries.push(entry);
      } else {
        bySymbol.set(target, { name: exported.name, symbol: target, entries: [entry] });
      }
    }
  }
  return { checked: [...bySymbol.values()], missing: [], checker };
}

describe('TSDoc of the public API', () => {
  const { checked, missing, checker } = collect();

  it('finds every entry point listed in typedoc.json', () => {
    expect(missing, `entry points listed in typedoc.json but missing on disk`).toEqual([]);
    expect(checked.length).toBeGreaterThan(0);
  });

  it('documents every export (description, @example, option defaults)', () => {
    if (checker === undefined) return;
    const seenProperties = new Set<ts.Node>();
    const problems = checked
      .filter((item) => !ALLOWLIST.has(item.name))
      .flatMap((item) => findings(checker, item, seenProperties));
    expect(problems, `${problems.length} TSDoc findings:\n${problems.join('\n')}\n`).toEqual([]);
  });

  it('keeps the allowlist to exports that exist', () => {
    const names = new Set(checked.map((item) => item.name));
    expect([...ALLOWLIST.keys()].filter((name) => !names.has(name))).toEqual([]);
  });
});
