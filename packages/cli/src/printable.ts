/**
 * `text` safe to print on a terminal: control characters (C0, DEL, C1: an escape sequence's ESC among them)
 * and the Unicode line and paragraph separators written as `\xNN` / `\u{NNNN}`, a backslash doubled, so a
 * key never moves the cursor, recolours the screen or forges a line of output.
 * @example
 * printable('user\u001b[2Jx') // 'user\\x1b[2Jx'
 */
export function printable(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (char === '\\') out += '\\\\';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else if (
      (code >= 0x80 && code < 0xa0) ||
      code === 0x2028 ||
      code === 0x2029 ||
      code === 0x200e ||
      code === 0x200f ||
      (code >= 0x202a && code <= 0x202e) ||
      (code >= 0x2066 && code <= 0x2069)
    )
      out += `\\u{${code.toString(16)}}`;
    else out += char;
  }
  return out;
}
