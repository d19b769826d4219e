import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * The size targets, measured on the sources: the longest function (any function, method, arrow or
 * accessor body, in lines from its first to its last) and the longest command file. Functions are
 * counted whole, nested ones included in their parent, as a reader meets them.
 */
export interface CodeSize {
  longestFunction: { lines: number; where: string };
  longestCommand: { lines: number; file: string };
  functionsOver80: string[];
  commandsOver40: string[];
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(full));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

function isFunctionLike(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

function nameOf(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText(source);
  return '(anonymous)';
}

function functionLengths(file: string, repo: string): Array<{ lines: number; where: string }> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const found: Array<{ lines: number; where: string }> = [];
  const visit = (node: ts.Node): void => {
    if (isFunctionLike(node) && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ lines: end - start + 1, where: `${path.relative(repo, file)}:${start + 1} ${nameOf(node, source)}` });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

export function measureCodeSize(repo: string): CodeSize {
  const files = [...tsFiles(path.join(repo, 'src')), ...tsFiles(path.join(repo, 'commands'))];
  const functions = files.flatMap((file) => functionLengths(file, repo)).sort((a, b) => b.lines - a.lines);
  const commands = tsFiles(path.join(repo, 'commands'))
    .map((file) => ({ file: path.relative(repo, file), lines: readFileSync(file, 'utf8').trimEnd().split('\n').length }))
    .sort((a, b) => b.lines - a.lines);
  return {
    longestFunction: functions[0] ?? { lines: 0, where: '-' },
    longestCommand: commands[0] ?? { lines: 0, file: '-' },
    functionsOver80: functions.filter((f) => f.lines > 80).map((f) => `${f.where} (${f.lines})`),
    commandsOver40: commands.filter((c) => c.lines > 40).map((c) => `${c.file} (${c.lines})`),
  };
}

/** The bench's lines for the size targets. */
export function codeSizeRows(repo: string): string[] {
  const size = measureCodeSize(repo);
  const rows = [
    `longest function:           ${size.longestFunction.lines} lines, ${size.longestFunction.where} (target ≤ 80)`,
    `longest command:            ${size.longestCommand.lines} lines, ${size.longestCommand.file} (target ≤ 40)`,
  ];
  if (size.functionsOver80.length > 0) rows.push(`  functions over 80 lines: ${size.functionsOver80.join(', ')}`);
  if (size.commandsOver40.length > 0) rows.push(`  commands over 40 lines: ${size.commandsOver40.join(', ')}`);
  return rows;
}

if (process.argv[1] && import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${codeSizeRows(process.argv[2] ?? process.cwd()).join('\n')}\n`);
}
