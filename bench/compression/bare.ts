/**
 * The floor: plain node:http compressing by hand, per request, with `zlib.brotliCompress`
 * (quality 4, as portico's and the `compression` package's defaults) and the exact
 * Content-Length; the least a compressing server can do.
 */
import { brotliCompress, constants } from 'node:zlib';
import { serveBare } from '../lib/bare.js';
import { PATH, payload } from './body.js';

serveBare(PATH, (_req, res) => {
  const body = Buffer.from(JSON.stringify(payload()));
  const params = {
    [constants.BROTLI_PARAM_QUALITY]: 4,
    [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
  };
  brotliCompress(body, { params }, (err, compressed) => {
    if (err) return res.destroy(err);
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Encoding': 'br',
      Vary: 'Accept-Encoding',
      'Content-Length': compressed.length,
    });
    res.end(compressed);
  });
});
