// Rejects oversized request bodies before anything reads them. Yoga reads JSON bodies without a
// limit, so the cap lives in front of it: by declared length, and POSTs that do not declare one
// (chunked uploads) are refused rather than buffered.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';

export function limitRequestBody(handler: RequestListener, maxBytes: number): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const declared = req.headers['content-length'];
    if (req.method === 'POST' && declared === undefined) {
      return reject(res, 411, 'LENGTH_REQUIRED', 'send a Content-Length header with the request body');
    }
    if (declared !== undefined && Number(declared) > maxBytes) {
      return reject(res, 413, 'PAYLOAD_TOO_LARGE', `request body exceeds ${maxBytes} bytes`);
    }
    return handler(req, res);
  };
}

function reject(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
  res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
}
