import type { Command } from "commander";
import { outputFor, type Runtime } from "./context";
import { UsageError } from "./exit-codes";

interface Node {
  /** " intents list" */
  path: string;
  words: string[];
}

/** Every command path with the words that may follow it: its subcommands and its options. */
function walk(command: Command, path = ""): Node[] {
  const subcommands = command.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
  const options = command.options.flatMap((o) => [o.long, o.short].filter((x): x is string => Boolean(x)));
  const words = [...subcommands.map((c) => c.name()), ...options, "--help"];
  return [{ path, words }, ...subcommands.flatMap((c) => walk(c, `${path} ${c.name()}`))];
}

export function bashCompletion(program: Command): string {
  const nodes = walk(program);
  const name = program.name();
  const paths = nodes.filter((n) => n.path).map((n) => `"${n.path}"`).join("|");
  const cases = nodes.map((n) => `    "${n.path}") words="${n.words.join(" ")}" ;;`).join("\n");
  return `# ${name} completion for bash (and zsh): source <(${name} completion bash)
_${name}_complete() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" word words i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    case "$path $word" in
      ${paths}) path="$path $word" ;;
    esac
  done
  case "$path" in
${cases}
    *) words="" ;;
  esac
  COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
complete -F _${name}_complete ${name}
`;
}

export function zshCompletion(program: Command): string {
  return `# ${program.name()} completion for zsh: source <(${program.name()} completion zsh)
autoload -U +X bashcompinit && bashcompinit
${bashCompletion(program)}`;
}

export function fishCompletion(program: Command): string {
  const name = program.name();
  const lines = [`# ${name} completion for fish: ${name} completion fish > ~/.config/fish/completions/${name}.fish`, `complete -c ${name} -f`];
  for (const top of program.commands) {
    lines.push(`complete -c ${name} -n "__fish_use_subcommand" -a ${top.name()} -d ${JSON.stringify(top.description())}`);
    for (const sub of top.commands) lines.push(`complete -c ${name} -n "__fish_seen_subcommand_from ${top.name()}; and not __fish_seen_subcommand_from ${top.commands.map((c) => c.name()).join(" ")}" -a ${sub.name()} -d ${JSON.stringify(sub.description())}`);
  }
  for (const option of program.options) if (option.long) lines.push(`complete -c ${name} -l ${option.long.slice(2)} -d ${JSON.stringify(option.description)}`);
  return `${lines.join("\n")}\n`;
}

export function registerCompletion(program: Command, runtime: Runtime): void {
  program
    .command("completion")
    .description("print a shell completion script: bash, zsh or fish (e.g. source <(intentmesh completion bash))")
    .argument("<shell>", "bash, zsh or fish")
    .action((shell: string, _options: unknown, command: Command) => {
      const render = { bash: bashCompletion, zsh: zshCompletion, fish: fishCompletion }[shell];
      if (!render) throw new UsageError(`no completion for ${shell}: bash, zsh or fish`);
      outputFor(command, runtime).line(render(program).trimEnd());
    });
}
