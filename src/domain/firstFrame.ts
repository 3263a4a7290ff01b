// The one line of an error an operator scanning a list reads under its message: the stack's first
// (innermost) frame as stored, line numbers kept, or without a recognisable frame the message's
// first line. The group signature's frames (lazarus_stack_frames) are normalised for grouping;
// this is the stored text, for reading.

const MAX_LINE = 200;

const clip = (line: string) => (line.length > MAX_LINE ? `${line.slice(0, MAX_LINE - 1)}…` : line);

/**
 * The first frame of `stack`: a line starting "at " (Node, JVM, .NET), "fn@file:1:2" (Firefox,
 * Safari), a Ruby "file.rb:12:in" line, a Go "\t/path/file.go:88" line (with the function above
 * it), or, for a Python traceback, its last `File "…", line N, in fn` line; null when none is found.
 */
export function firstStackFrame(stackHead: string, stackTail: string = stackHead): string | null {
  if (stackTail.includes('Traceback (most recent call last)') || /File "[^"]+", line \d+/.test(stackTail)) {
    const frames = stackTail.split('\n').map((l) => l.trim()).filter((l) => /^File "[^"]+", line \d+/.test(l));
    return frames.length > 0 ? clip(frames.at(-1)!) : null;
  }
  const lines = stackHead.split('\n').map((l) => l.replace(/\s+$/, ''));
  for (let i = 0; i < lines.length; i++) {
    const t = lines[i]!.trim();
    if (/^at \S/.test(t)) return clip(t);
    if (/^[\w$.<>/]*@\S+:\d+(:\d+)?$/.test(t)) return clip(t);
    if (/^(from )?\S+\.rb:\d+:in /.test(t)) return clip(t.replace(/^from /, ''));
    const above = i > 0 ? lines[i - 1]!.trim() : '';
    if (/^\/\S+\.go:\d+/.test(t) && above !== '' && !/^(goroutine |panic\(|runtime\.)/.test(above)) {
      return clip(`${above} ${t.replace(/\s+\+0x[0-9a-f]+$/, '')}`);
    }
  }
  return null;
}

/** The first stack frame, else the message's first non-blank line (empty when the message is blank). */
export function errorHeadline(e: { stackHead: string | null; stackTail: string | null; messageHead: string }): string {
  const frame = e.stackHead === null ? null : firstStackFrame(e.stackHead, e.stackTail ?? e.stackHead);
  if (frame) return frame;
  return clip(e.messageHead.split('\n').map((l) => l.trim()).find((l) => l !== '') ?? '');
}
