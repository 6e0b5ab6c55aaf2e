//! Host manifests (`harness/hosts/NAME/host.toml`, docs/hosts.md): how to provision a host, how to
//! start it for one run, which model API it speaks, how it names a server's tools. The command
//! and environment take placeholders, expanded per run by [`Expand`].

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The MCP server's name in the host's configuration (`mcp__listsync__echo` in Claude Code).
pub const SERVER_NAME: &str = "listsync";

/// A host manifest as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostManifest {
    /// Short name (`claude-code`).
    pub name: String,
    /// What it is.
    pub description: String,
    /// The model API it speaks: `anthropic-messages` (the one the model server serves).
    pub api: String,
    /// Pinned versions, the default first (`{version}`); empty for a host built into listsync.
    #[serde(default)]
    pub versions: Vec<String>,
    /// Programs it needs on PATH (a clear skip line names the missing one).
    #[serde(default)]
    pub needs: Vec<String>,
    /// Installs the host on first use; its last line on stdout is the install directory
    /// (`{provisioned}`). Progress on stderr.
    #[serde(default)]
    pub provision: Vec<String>,
    /// How the host names a server tool: this prefix, then the tool's name.
    #[serde(default)]
    pub tool_prefix: String,
    /// Tools the host offers the model of its own, named as in `tools` (mcp-use's tools for
    /// the server's resources and prompts): not server tools, left out of the offered list.
    #[serde(default)]
    pub own_tools: Vec<String>,
    /// The host's command line for one run.
    pub command: Vec<String>,
    /// Its environment (added to a cleared one that keeps PATH only).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Longest run, e.g. `120s` (default 120 s).
    #[serde(default)]
    pub timeout: Option<String>,
}

/// What placeholders stand for in one run.
#[derive(Clone, Debug, Default)]
pub struct Expand {
    /// `{listsync}`: the listsync binary.
    pub listsync: PathBuf,
    /// `{hosts}`: the hosts' directory (`harness/hosts`).
    pub hosts: PathBuf,
    /// `{version}`.
    pub version: String,
    /// `{cache}`: where hosts are provisioned.
    pub cache: PathBuf,
    /// `{provisioned}`: what provisioning printed.
    pub provisioned: String,
    /// `{model_url}`: the model server's base URL.
    pub model_url: String,
    /// `{mcp_config}`: the MCP configuration file written for the run.
    pub mcp_config: PathBuf,
    /// `{prompt}`: the plan's prompt.
    pub prompt: String,
    /// `{home}`: an empty private directory for HOME.
    pub home: PathBuf,
    /// `{server}` (a whole argument): the MCP server's command line, spliced in.
    pub server: Vec<String>,
}

impl Expand {
    fn text(&self, s: &str) -> String {
        s.replace("{listsync}", &self.listsync.to_string_lossy())
            .replace("{hosts}", &self.hosts.to_string_lossy())
            .replace("{version}", &self.version)
            .replace("{cache}", &self.cache.to_string_lossy())
            .replace("{provisioned}", &self.provisioned)
            .replace("{model_url}", &self.model_url)
            .replace("{mcp_config}", &self.mcp_config.to_string_lossy())
            .replace("{prompt}", &self.prompt)
            .replace("{home}", &self.home.to_string_lossy())
    }

    /// A command line: `{server}` as a whole argument becomes the server's argv.
    pub fn argv(&self, args: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for a in args {
            if a == "{server}" {
                out.extend(self.server.iter().cloned());
            } else {
                out.push(self.text(a));
            }
        }
        out
    }

    /// The environment.
    pub fn env(&self, env: &BTreeMap<String, String>) -> Vec<(String, String)> {
        env.iter().map(|(k, v)| (k.clone(), self.text(v))).collect()
    }
}

impl HostManifest {
    /// Reads a manifest file.
    pub fn read(path: &Path) -> Result<HostManifest, String> {
        let text = crate::limited_file::read_text(path, 1 << 20)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let m: HostManifest =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if m.api != "anthropic-messages" {
            return Err(format!(
                "{}: api {:?}: the model server speaks anthropic-messages only",
                path.display(),
                m.api
            ));
        }
        if m.command.is_empty() {
            return Err(format!("{}: an empty command", path.display()));
        }
        Ok(m)
    }

    /// The run's bound.
    pub fn timeout(&self) -> Result<Duration, String> {
        match &self.timeout {
            None => Ok(Duration::from_secs(120)),
            Some(t) => {
                let t = t.trim();
                let secs: u64 = t
                    .strip_suffix('s')
                    .unwrap_or(t)
                    .parse()
                    .map_err(|_| format!("timeout {t:?}: whole seconds, e.g. 120s"))?;
                Ok(Duration::from_secs(secs.clamp(1, 3600)))
            }
        }
    }

    /// The MCP configuration the host reads (`{mcp_config}`): Claude Code's `mcpServers` format.
    pub fn mcp_config(server: &[String]) -> serde_json::Value {
        serde_json::json!({
            "mcpServers": {
                SERVER_NAME: {
                    "type": "stdio",
                    "command": server.first().cloned().unwrap_or_default(),
                    "args": server.get(1..).unwrap_or_default(),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_expand_and_server_splices() {
        let x = Expand {
            model_url: "http://127.0.0.1:9".into(),
            server: vec!["a".into(), "b".into()],
            prompt: "go".into(),
            ..Expand::default()
        };
        let argv = x.argv(&[
            "host".into(),
            "--model={model_url}".into(),
            "{prompt}".into(),
            "--".into(),
            "{server}".into(),
        ]);
        assert_eq!(
            argv,
            ["host", "--model=http://127.0.0.1:9", "go", "--", "a", "b"]
        );
    }
}
