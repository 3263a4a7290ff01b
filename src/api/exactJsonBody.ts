// A GraphQL request's JSON body is read with every number as it came. Yoga reads it with
// `request.json()`, which rounds 12345678901234567890 to 12345678901234567000 before any resolver
// sees it, so a payload recorded or edited over GraphQL would be stored changed. The JSON scalar
// keeps such numbers in literals (api/schema/builder.ts); this keeps them in variables.
import type { Plugin } from 'graphql-yoga';
import { parseJsonKeepingNumbers } from '../reads/exactJson.ts';

export function useExactJsonBody(): Plugin {
  return {
    onRequestParse({ requestParser, setRequestParser }) {
      if (requestParser) setRequestParser((req) => requestParser(withExactJson(req)));
    },
  };
}

// Of the parsers Yoga chooses from, only the one for JSON bodies calls `json()`; everything else is the request's own.
function withExactJson(request: Request): Request {
  return new Proxy(request, {
    get(target, key) {
      if (key === 'json') return async () => parseJsonKeepingNumbers(await target.text());
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
