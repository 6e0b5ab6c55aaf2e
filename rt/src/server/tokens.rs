//! Bearer tokens of the HTTP endpoint (`listsync serve --http --auth-tokens FILE`): which
//! principal a token names and the authorization context its requests are made under.
//!
//! The file holds one token per line, `TOKEN PRINCIPAL CONTEXT` separated by blanks (`#` starts a
//! comment line); a token is at least [`MIN_TOKEN_LEN`] characters of printable ASCII. A presented
//! token is compared with every known token in constant time (no early exit on the first
//! differing byte, nor on the first matching entry), so response timing does not reveal how much
//! of a token was right.

use listsync_core::vocab::AuthCtx;
use std::path::Path;
use std::sync::Arc;
use subtle::{ConditionallySelectable, ConstantTimeEq};

/// Shortest token accepted in a token file.
pub const MIN_TOKEN_LEN: usize = 16;

/// Who made a request, as its bearer token says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// The principal's name (from the token file; `anonymous` without authentication).
    pub name: Arc<str>,
    /// The authorization context its requests are made under.
    pub auth: AuthCtx,
}

impl Principal {
    /// The principal of every request when the endpoint authenticates nobody: context 0, which
    /// sees public items only.
    pub fn anonymous() -> Principal {
        Principal {
            name: "anonymous".into(),
            auth: AuthCtx(0),
        }
    }
}

#[derive(Clone)]
struct Entry {
    token: Vec<u8>,
    principal: Principal,
}

/// The tokens an endpoint accepts.
#[derive(Clone, Default)]
pub struct TokenTable {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for TokenTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a token.
        write!(f, "TokenTable({} tokens)", self.entries.len())
    }
}

impl TokenTable {
    /// Parses a token file's text.
    pub fn parse(text: &str) -> Result<TokenTable, String> {
        let mut entries: Vec<Entry> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = i + 1;
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [token, name, ctx] = fields[..] else {
                return Err(format!(
                    "line {at}: expected `TOKEN PRINCIPAL CONTEXT`, got {} fields",
                    fields.len()
                ));
            };
            if token.len() < MIN_TOKEN_LEN {
                return Err(format!(
                    "line {at}: the token of '{name}' is shorter than {MIN_TOKEN_LEN} characters"
                ));
            }
            if !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(format!(
                    "line {at}: the token of '{name}' is not printable ASCII"
                ));
            }
            let auth = ctx
                .parse::<u8>()
                .map(AuthCtx)
                .map_err(|_| format!("line {at}: context '{ctx}' is not a number in 0..=255"))?;
            if entries.iter().any(|e| e.token == token.as_bytes()) {
                return Err(format!("line {at}: the token of '{name}' appears twice"));
            }
            entries.push(Entry {
                token: token.as_bytes().to_vec(),
                principal: Principal {
                    name: name.into(),
                    auth,
                },
            });
        }
        if entries.is_empty() {
            return Err("no tokens (lines `TOKEN PRINCIPAL CONTEXT`)".into());
        }
        Ok(TokenTable { entries })
    }

    /// Reads and parses a token file (at most 1 MiB). A file that others may read is accepted,
    /// with a warning once it has been read as a token table (a file refused is only refused).
    pub fn load(path: &Path) -> Result<TokenTable, String> {
        read_token_file(path, TokenTable::parse)
    }

    /// The admin endpoint's table (`listsync serve --admin-token-file FILE`): one token, the
    /// file's first line (the same file `listsync change --token-file` reads), at least
    /// [`MIN_TOKEN_LEN`] printable ASCII characters, naming the principal `admin`. Presented
    /// tokens are compared as with [`TokenTable::lookup`], in constant time.
    pub fn admin(path: &Path) -> Result<TokenTable, String> {
        read_token_file(path, |text| {
            let token = text.lines().next().unwrap_or("").trim();
            if token.len() < MIN_TOKEN_LEN {
                return Err(format!(
                    "line 1: the admin token is shorter than {MIN_TOKEN_LEN} characters"
                ));
            }
            if !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err("line 1: the admin token is not printable ASCII".into());
            }
            Ok(TokenTable {
                entries: vec![Entry {
                    token: token.as_bytes().to_vec(),
                    principal: Principal {
                        name: "admin".into(),
                        auth: AuthCtx(0),
                    },
                }],
            })
        })
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no tokens.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The principal `presented` names, if it is a known token. Every entry is compared, each in
    /// constant time.
    pub fn lookup(&self, presented: &[u8]) -> Option<&Principal> {
        let mut found = subtle::Choice::from(0);
        let mut index = 0u64;
        for (i, e) in self.entries.iter().enumerate() {
            let hit = e.token.as_slice().ct_eq(presented);
            index.conditional_assign(&(i as u64), hit);
            found |= hit;
        }
        bool::from(found).then(|| &self.entries[index as usize].principal)
    }
}

/// Reads a token file (at most 1 MiB) and parses it with `parse`; warns once it is read if others
/// may read it.
fn read_token_file(
    path: &Path,
    parse: impl FnOnce(&str) -> Result<TokenTable, String>,
) -> Result<TokenTable, String> {
    use std::io::Read;
    const LIMIT: u64 = 1 << 20;
    let shown = path.display();
    let f = std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?;
    let meta = f.metadata().ok();
    let mut text = String::new();
    f.take(LIMIT + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{shown}: {e}"))?;
    if text.len() as u64 > LIMIT {
        return Err(format!("{shown}: more than {LIMIT} bytes (the limit)"));
    }
    let table = parse(&text).map_err(|e| format!("{shown}: {e}"))?;
    #[cfg(unix)]
    if let Some(meta) = meta {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!("{shown}: the token file is readable by other users (chmod 600)");
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_principals_and_contexts() {
        let t = TokenTable::parse(
            "# token principal context\n\
             aaaaaaaaaaaaaaaa-alice alice 1\n\n\
             bbbbbbbbbbbbbbbb-bob bob 0\n",
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        let a = t.lookup(b"aaaaaaaaaaaaaaaa-alice").unwrap();
        assert_eq!((&*a.name, a.auth), ("alice", AuthCtx(1)));
        let b = t.lookup(b"bbbbbbbbbbbbbbbb-bob").unwrap();
        assert_eq!((&*b.name, b.auth), ("bob", AuthCtx(0)));
        assert!(t.lookup(b"aaaaaaaaaaaaaaaa-alicf").is_none());
        assert!(t.lookup(b"aaaaaaaaaaaaaaaa-alic").is_none());
        assert!(t.lookup(b"").is_none());
    }

    #[test]
    fn bad_token_files_are_refused_with_the_line() {
        for (text, want) in [
            ("", "no tokens"),
            ("short alice 1", "shorter than 16"),
            ("aaaaaaaaaaaaaaaaaaaa alice", "2 fields"),
            ("aaaaaaaaaaaaaaaaaaaa alice 256", "context '256'"),
            (
                "aaaaaaaaaaaaaaaaaaaa alice 1\naaaaaaaaaaaaaaaaaaaa bob 2",
                "line 2: the token of 'bob' appears twice",
            ),
        ] {
            let e = TokenTable::parse(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn debug_never_shows_a_token() {
        let t = TokenTable::parse("aaaaaaaaaaaaaaaa-secret alice 1").unwrap();
        assert!(!format!("{t:?}").contains("secret"));
    }
}
