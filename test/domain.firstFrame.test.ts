import { describe, expect, it } from 'vitest';
import { errorHeadline, firstStackFrame } from '../src/domain/firstFrame.ts';

const head = (stack: string | null, message = 'boom') => errorHeadline({ stackHead: stack, stackTail: stack, messageHead: message });

describe('the first stack frame of a stored error', () => {
  it.each([
    ['Node', 'Error: HTTP 503\n    at chargeCard (/app/src/payments/charge.ts:42:7)\n    at main (/app/src/index.ts:3:1)', 'at chargeCard (/app/src/payments/charge.ts:42:7)'],
    ['JVM', 'java.io.IOException: refused\n\tat com.acme.Ledger.post(Ledger.java:88)\n\tat com.acme.Main.run(Main.java:12)', 'at com.acme.Ledger.post(Ledger.java:88)'],
    ['.NET', 'System.Exception: no\n   at Acme.Orders.Place(Int32 id) in C:\\src\\Orders.cs:line 42', 'at Acme.Orders.Place(Int32 id) in C:\\src\\Orders.cs:line 42'],
    ['Python (innermost last)', 'Traceback (most recent call last):\n  File "/srv/app/main.py", line 3, in <module>\n  File "/srv/app/ledger.py", line 12, in post\nValueError: no', 'File "/srv/app/ledger.py", line 12, in post'],
    ['Firefox', 'charge@https://cdn.example.com/app.js:1:200\nmain@https://cdn.example.com/app.js:1:90', 'charge@https://cdn.example.com/app.js:1:200'],
    ['Ruby', "/app/models/order.rb:12:in `charge'\n\tfrom /app/main.rb:3:in `<main>'", "/app/models/order.rb:12:in `charge'"],
    ['Go (runtime frames skipped)', 'goroutine 1 [running]:\npanic({0x1})\n\t/usr/local/go/src/runtime/panic.go:914 +0x21f\nmain.charge(...)\n\t/build/pay/charge.go:88 +0x1d', 'main.charge(...) /build/pay/charge.go:88'],
  ])('%s', (_name, stack, frame) => {
    expect(firstStackFrame(stack)).toBe(frame);
    expect(head(stack)).toBe(frame);
  });

  it('falls back to the first non-blank line of the message without a stack or a recognisable frame', () => {
    expect(head(null, '\nHTTP 503 from inventory (request 8812)\nbody: {}')).toBe('HTTP 503 from inventory (request 8812)');
    expect(head('just some text', 'SMTP relay refused')).toBe('SMTP relay refused');
    expect(head(null, '   ')).toBe('');
  });

  it('clips a long frame to 200 characters', () => {
    const line = head(`Error\n    at ${'x'.repeat(500)} (/a.ts:1:1)`);
    expect(line).toHaveLength(200);
    expect(line.endsWith('…')).toBe(true);
  });
});
