//! Shared helpers of the integration tests.
#![allow(dead_code, clippy::unwrap_used)]

/// A real 2048-bit RSA public key (SPKI PEM), without trailing newline as Salt stores it.
pub const PEM: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAsdn2nZbnVJsOKkkYceyh
8Df1wXt9u6WxwhJxG6/OsYXVbt+i6knzFQa6UE7Mpd5WasYOhQ0B8WG2MGHLSuJC
4N8Pjyni6wKnpJb1wMjI8NwP/2LjzO/UtEKwfubtREXjoq5X/4400BpyESUZg8ya
P7e6tetkrZSKlS/z5J0lIfxIbPchPYNG2+rSVA0b7XQF3qQEYUXayvRbuFRBKEIP
pdmJpJwtHCZorOTy+z8BfcOmWRjCNNVDhI1yZmNUx9srD8Ed9fowbCn1vQsmzuLr
z+jN/wVDmk+hRMs6RXMcgbcG9y4ZO+71tMxptGENlZlR9MxLqPmeOzX1uBAsPYpY
mwIDAQAB
-----END PUBLIC KEY-----";

/// Hex of the UTF-8 bytes (to pass arbitrary strings to Python line by line).
pub fn hexs(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}
