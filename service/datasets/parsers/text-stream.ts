import { Transform, type Readable } from 'node:stream';
import { TextDecoder } from 'node:util';

/**
 * Decodes a byte stream to text without ever splitting a multi-byte character. UTF-8 unless the
 * first 64 KiB are not valid UTF-8, in which case the file is read as Windows-1252 (what spreadsheet
 * programs write as "CSV" on Windows). A UTF-8 BOM is dropped.
 */
export function decodeText(input: Readable): Readable {
  let decoder: TextDecoder | null = null;
  let head: Buffer[] = [];
  let headBytes = 0;
  const SNIFF = 64 * 1024;

  const choose = (sample: Buffer, final: boolean): TextDecoder => {
    let utf8 = true;
    try {
      // A sample cut mid-character is fine: only a complete invalid sequence counts.
      new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: !final });
    } catch {
      utf8 = false;
    }
    return new TextDecoder(utf8 ? 'utf-8' : 'windows-1252', { ignoreBOM: false });
  };

  const t = new Transform({
    readableObjectMode: false,
    decodeStrings: true,
    transform(chunk: Buffer, _enc, cb) {
      if (!decoder) {
        head.push(chunk);
        headBytes += chunk.length;
        if (headBytes < SNIFF) return cb();
        const sample = Buffer.concat(head);
        head = [];
        decoder = choose(sample, false);
        return cb(null, decoder.decode(sample, { stream: true }));
      }
      cb(null, decoder.decode(chunk, { stream: true }));
    },
    flush(cb) {
      if (!decoder) {
        const sample = Buffer.concat(head);
        decoder = choose(sample, true);
        const text = decoder.decode(sample);
        return cb(null, text);
      }
      cb(null, decoder.decode());
    },
  });
  t.setEncoding('utf8');
  input.on('error', (e) => t.destroy(e));
  return input.pipe(t);
}
