//! What the store's tests share: forging a layout file as a buggy writer
//! would, every CRC that covers it made anew.

use std::path::Path;

/// Bytes of a layout file's header.
const HEADER: usize = 4096;

/// Recomputes a layout file's payload and header CRCs; returns (old, new) payload CRC.
pub fn reseal(file: &Path) -> (u32, u32) {
    let mut bytes = std::fs::read(file).unwrap();
    let old = u32::from_le_bytes(bytes[32..36].try_into().unwrap());
    let new = crc32fast::hash(&bytes[HEADER..]);
    bytes[32..36].copy_from_slice(&new.to_le_bytes());
    let h = crc32fast::hash(&bytes[..36]);
    bytes[36..40].copy_from_slice(&h.to_le_bytes());
    std::fs::write(file, &bytes).unwrap();
    (old, new)
}

/// Replaces a file's CRC in manifest.json (and reseals the manifest).
pub fn remanifest(store: &Path, (old, new): (u32, u32)) {
    let m = store.join("manifest.json");
    let text = std::fs::read_to_string(&m).unwrap();
    let needle = format!("\"crc32\": {old}");
    assert_eq!(text.matches(&needle).count(), 1, "{needle} in {text}");
    std::fs::write(&m, text.replace(&needle, &format!("\"crc32\": {new}"))).unwrap();
    // The manifest agrees with the crafted file: its own checksum made anew.
    outcore_store::manifest::reseal_for_tests(store);
}
