use listsync_model::{check, configs};
fn main() {
    let name = std::env::args().nth(1).unwrap();
    let prop = std::env::args().nth(2).unwrap();
    let c = configs::by_name(&name).unwrap();
    let r = check(&c.scenario, c.search, 1, &mut |_, _| {});
    for x in &r.counterexamples {
        if x.property.as_str() == prop {
            for l in &x.trace.log {
                println!("{l}");
            }
            println!("{:?}", x.trace.detail);
        }
    }
}
