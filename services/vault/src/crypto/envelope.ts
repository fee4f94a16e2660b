import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * Envelope encryption of credential material (RFC-0014 §10.1: AES-256-GCM, keys apart from the
 * data). Each credential has a data key of its own; the material is sealed under it, and the
 * data key is sealed (wrapped) under a key-encryption key (KEK) that lives in configuration,
 * never in the database. A sealed value is iv (12 bytes) | tag (16 bytes) | ciphertext, in
 * base64; its additional authenticated data binds it to the credential (and the wrapped key to
 * the KEK id too), so a sealed value copied onto another row does not open there.
 */

const IV_BYTES = 12;
const TAG_BYTES = 16;
export const KEY_BYTES = 32;

export function seal(key: Buffer, plaintext: Buffer, aad: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(aad, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
}

/** Throws (without saying anything about the contents) when the value was not sealed under `key` for `aad`. */
export function open(key: Buffer, sealed: string, aad: string): Buffer {
  const bytes = Buffer.from(sealed, "base64");
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new Error("sealed value too short");
  const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(aad, "utf8"));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
}

/**
 * The key-encryption keys: several, each with an id, so a new key can be introduced without
 * downtime. New credentials (and rotations) are wrapped under the primary; a credential is
 * opened with the key id recorded on its row; the re-wrap job moves rows to the primary, after
 * which an old key can be removed from configuration.
 */
export class KeyRing {
  private readonly keys: ReadonlyMap<string, Buffer>;

  constructor(
    keys: ReadonlyMap<string, Buffer>,
    readonly primaryId: string,
  ) {
    if (!keys.has(primaryId)) throw new Error(`the primary key-encryption key ${primaryId} is not among the keys`);
    for (const [id, key] of keys) if (key.length !== KEY_BYTES) throw new Error(`key-encryption key ${id} is not ${KEY_BYTES} bytes`);
    this.keys = keys;
  }

  get ids(): string[] {
    return [...this.keys.keys()];
  }

  has(id: string): boolean {
    return this.keys.has(id);
  }

  private kek(id: string): Buffer {
    const key = this.keys.get(id);
    if (!key) throw new KeyUnavailableError(id);
    return key;
  }

  /** Seals new material for a credential: a fresh data key, wrapped under the primary KEK. */
  sealMaterial(credentialId: string, material: Record<string, string>): SealedMaterial {
    const dataKey = randomBytes(KEY_BYTES);
    try {
      return {
        kekId: this.primaryId,
        wrappedKey: seal(this.kek(this.primaryId), dataKey, wrapAad(credentialId, this.primaryId)),
        material: seal(dataKey, Buffer.from(JSON.stringify(material), "utf8"), materialAad(credentialId)),
      };
    } finally {
      dataKey.fill(0);
    }
  }

  /** Opens a credential's material with the KEK its row names. */
  openMaterial(credentialId: string, sealed: SealedMaterial): Record<string, string> {
    const dataKey = open(this.kek(sealed.kekId), sealed.wrappedKey, wrapAad(credentialId, sealed.kekId));
    try {
      return JSON.parse(open(dataKey, sealed.material, materialAad(credentialId)).toString("utf8")) as Record<string, string>;
    } finally {
      dataKey.fill(0);
    }
  }

  /** Re-wraps a credential's data key under the primary KEK; the material itself is untouched. */
  rewrap(credentialId: string, sealed: SealedMaterial): Pick<SealedMaterial, "kekId" | "wrappedKey"> {
    const dataKey = open(this.kek(sealed.kekId), sealed.wrappedKey, wrapAad(credentialId, sealed.kekId));
    try {
      return { kekId: this.primaryId, wrappedKey: seal(this.kek(this.primaryId), dataKey, wrapAad(credentialId, this.primaryId)) };
    } finally {
      dataKey.fill(0);
    }
  }
}

export interface SealedMaterial {
  kekId: string;
  wrappedKey: string;
  material: string;
}

/** A row sealed under a key the configuration no longer holds: named by id, never by value. */
export class KeyUnavailableError extends Error {
  constructor(readonly kekId: string) {
    super(`key-encryption key ${kekId} is not configured (VAULT_KEK / VAULT_KEK_FILE)`);
  }
}

const materialAad = (credentialId: string) => `intentmesh.vault.material:${credentialId}`;
const wrapAad = (credentialId: string, kekId: string) => `intentmesh.vault.data-key:${credentialId}:${kekId}`;
