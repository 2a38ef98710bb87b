/** One comparison's section of BENCHMARKS.md, the same frame for every kind of comparison. */
import type { MachineInfo } from './types.js';

/** What a section shows; `how` are the kind's own lines of "How this table was made". */
export interface SectionParts {
  name: string;
  title: string;
  description: string;
  notes: readonly string[];
  date: string;
  command: string;
  machine: MachineInfo;
  /** The Markdown table. */
  table: string;
  /** The lines after Date, Command, Machine (each without its leading `- `). */
  how: readonly string[];
}

export function machineLine(m: MachineInfo): string {
  return (
    `${m.cpus} × ${m.cpuModel}, ${m.totalMemoryGiB} GiB, Node ${m.node}, ${m.platform}; ` +
    `load average at start ${m.loadAverage.join(' / ')}`
  );
}

/** `  - name: \`command\`` lines, one per process. */
export const commandList = (commands: Readonly<Record<string, string>>) =>
  Object.entries(commands)
    .map(([name, command]) => `  - ${name}: \`${command}\``)
    .join('\n');

export function renderSection(parts: SectionParts): string {
  const notes = parts.notes.map((n) => `- ${n}`).join('\n');
  const how = [
    `Date: ${parts.date}`,
    `Command: \`${parts.command}\``,
    `Machine: ${machineLine(parts.machine)}`,
    ...parts.how,
    `Raw data: [\`bench/results/${parts.name}.json\`](bench/results/${parts.name}.json)`,
  ];
  return `## \`${parts.name}\`: ${parts.title}

${parts.description}

${parts.table}

![${parts.name} chart](bench/results/${parts.name}.svg)

${notes}

<details><summary>How this table was made</summary>

${how.map((line) => `- ${line}`).join('\n')}

</details>
`;
}
