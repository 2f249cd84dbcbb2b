// AES-256-GCM sealing of the secrets stored in Postgres (Slack installations): a stolen dump or
// backup holds no usable token without the key, which lives only in the configuration.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface TokenCipher {
  /** Encrypts `plaintext`; `context` (the row's key) is authenticated, so a sealed value moved to another row does not open. */
  seal(plaintext: string, context: string): Buffer;
  /** Decrypts what {@link TokenCipher.seal} made with the same key and context; throws on any other input. */
  open(sealed: Buffer, context: string): string;
}

export function createTokenCipher(key: Buffer): TokenCipher {
  if (key.length !== 32) throw new Error('the token key must be 32 bytes (AES-256)');
  return {
    seal: (plaintext, context) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
    },
    open: (sealed, context) => {
      if (sealed.length < 1 + IV_BYTES + TAG_BYTES || sealed[0] !== VERSION) throw new Error('not a sealed value of this version');
      const iv = sealed.subarray(1, 1 + IV_BYTES);
      const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
      const decipher = createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(tag);
      try {
        return Buffer.concat([decipher.update(sealed.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        throw new Error('a stored token could not be decrypted: SLACK_TOKEN_KEY is not the key it was stored with, or the row was altered');
      }
    },
  };
}
