//! One application, several servers: the combined tool listing an application shows when it
//! connects to more than one MCP server, and how a call made under a combined name finds its
//! server (docs/design.md, "Many servers in one client").
//!
//! Tool names are unique only within one server. The application gives each server's tools a
//! prefix; the reference takes it from the key the application itself configured for that
//! server (`--server alpha=...`), which is unique by construction and does not change when the
//! connection is remade. The known-bad `prefix-from-server-info` takes it from the
//! `serverInfo.name` the server reports, so two servers that report the same name collide and
//! one's tools shadow the other's. The world, the simulator and rt's multi-server catalog all
//! build their combined listing here.

use crate::strategy::ClientStrategy;
use crate::vocab::{Item, Name};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Separator between a server's prefix and a tool name. A configured key never contains `_`
/// (see [`valid_key`]), so the first `__` of a combined name ends the prefix: the reference
/// naming is injective.
pub const SEPARATOR: &str = "__";

/// Longest configured server key accepted.
pub const MAX_KEY_LEN: usize = 32;

/// One server of an application that connects to several.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Member {
    /// The key the application configured for this server: unique among its servers.
    pub key: String,
    /// The `serverInfo.name` the server reports (any string; two servers may report the same).
    pub server_name: String,
}

/// Whether `key` can name a server: 1 to [`MAX_KEY_LEN`] characters of `a-z`, `0-9` and `-`,
/// so that `key__tool` is a valid MCP tool name and the prefix ends at the first `__`.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Checks a set of members: every key valid and unique. Says which is wrong.
pub fn check_members(members: &[Member]) -> Result<(), String> {
    for (i, m) in members.iter().enumerate() {
        if !valid_key(&m.key) {
            return Err(format!(
                "server key '{}' is not 1 to {MAX_KEY_LEN} characters of a-z, 0-9 and '-'",
                m.key.escape_debug()
            ));
        }
        if members[..i].iter().any(|o| o.key == m.key) {
            return Err(format!("server key '{}' is given twice", m.key));
        }
    }
    Ok(())
}

/// The prefix an application using `strategy` gives the tools of `member`: the configured key
/// for every strategy but `prefix-from-server-info`, which uses the reported server name.
pub fn prefix(strategy: ClientStrategy, member: &Member) -> &str {
    match strategy {
        ClientStrategy::PrefixFromServerInfo => &member.server_name,
        _ => &member.key,
    }
}

/// One entry of a combined listing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CombinedEntry {
    /// The name the application shows and calls it by.
    pub name: Name,
    /// Index of the member (the connection) it came from.
    pub member: usize,
    /// The tool as that server lists it.
    pub item: Item,
}

/// The combined listing of an application using `strategy`: every tool of every member's
/// published list, under `prefix__name`, sorted by name. `lists[i]` is member `i`'s published
/// tool list (`None` before its first). Built as a map from combined name to entry, the way
/// an application's router is, so that a later member's tool replaces an earlier one's under
/// the same combined name; with the reference prefixes that never happens.
pub fn combined(
    strategy: ClientStrategy,
    members: &[Member],
    lists: &[Option<&[Item]>],
) -> Vec<CombinedEntry> {
    let mut by_name: BTreeMap<Name, CombinedEntry> = BTreeMap::new();
    for (i, (m, list)) in members.iter().zip(lists).enumerate() {
        let p = prefix(strategy, m);
        for item in list.iter().flat_map(|l| l.iter()) {
            let name: Name = format!("{p}{SEPARATOR}{}", item.name).into();
            by_name.insert(
                name.clone(),
                CombinedEntry {
                    name,
                    member: i,
                    item: item.clone(),
                },
            );
        }
    }
    by_name.into_values().collect()
}

/// Where a call under combined name `name` goes: the entry of `listing` with that name.
pub fn route<'a>(listing: &'a [CombinedEntry], name: &str) -> Option<&'a CombinedEntry> {
    listing
        .binary_search_by(|e| (*e.name).cmp(name))
        .ok()
        .map(|i| &listing[i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn tool(name: &str, def: &str) -> Item {
        Item::new(name, def)
    }

    fn two_files() -> Vec<Member> {
        vec![
            Member {
                key: "alpha".into(),
                server_name: "files".into(),
            },
            Member {
                key: "beta".into(),
                server_name: "files".into(),
            },
        ]
    }

    #[test]
    fn configured_keys_keep_same_named_servers_apart() {
        let a = [tool("read", "a's read")];
        let b = [tool("read", "b's read"), tool("write", "b's write")];
        let l = combined(
            ClientStrategy::Reference,
            &two_files(),
            &[Some(&a), Some(&b)],
        );
        let names: Vec<&str> = l.iter().map(|e| &*e.name).collect();
        assert_eq!(names, ["alpha__read", "beta__read", "beta__write"]);
        assert_eq!(route(&l, "alpha__read").unwrap().member, 0);
        assert_eq!(route(&l, "beta__read").unwrap().member, 1);
        assert!(route(&l, "gamma__read").is_none());
    }

    #[test]
    fn server_info_prefixes_let_one_server_shadow_another() {
        let a = [tool("read", "a's read")];
        let b = [tool("read", "b's read")];
        let l = combined(
            ClientStrategy::PrefixFromServerInfo,
            &two_files(),
            &[Some(&a), Some(&b)],
        );
        assert_eq!(l.len(), 1, "one of the two reads is hidden");
        assert_eq!(
            route(&l, "files__read").unwrap().item.def,
            Arc::from("b's read")
        );
        // Before b has listed, the same name reaches a.
        let l = combined(
            ClientStrategy::PrefixFromServerInfo,
            &two_files(),
            &[Some(&a), None],
        );
        assert_eq!(route(&l, "files__read").unwrap().member, 0);
    }

    #[test]
    fn keys_are_checked() {
        assert!(check_members(&two_files()).is_ok());
        let mut m = two_files();
        m[1].key = "alpha".into();
        assert!(check_members(&m).unwrap_err().contains("twice"));
        for bad in ["", "a_b", "Alpha", "a b", &"k".repeat(MAX_KEY_LEN + 1)] {
            m[1].key = bad.into();
            assert!(check_members(&m).is_err(), "{bad:?}");
        }
    }
}
