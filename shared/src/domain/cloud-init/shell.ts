// Quoting for values spliced into the rendered shell script: single quotes, with ' written as '\''.
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}
