//! Renders trace files to SVG sequence diagrams: `diagram OUT_DIR TRACE...` (a quick way to
//! look at one diagram while working on the layout; `listsync report` renders them all).

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = std::path::PathBuf::from(args.next().expect("usage: diagram OUT_DIR TRACE..."));
    std::fs::create_dir_all(&out)?;
    for path in args {
        let text = std::fs::read_to_string(&path)?;
        let svg = listsync_render::diagram::trace_to_svg(&text)?;
        let name = std::path::Path::new(&path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file = out.join(format!("{name}.svg"));
        std::fs::write(&file, svg)?;
        println!("{}", file.display());
    }
    Ok(())
}
