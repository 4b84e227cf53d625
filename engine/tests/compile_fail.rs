//! Launching a kernel that does not exist, or with arguments of the wrong type, order or
//! count, must not compile. Cases: tests/ui/*.rs, expected errors: tests/ui/*.stderr
//! (regenerate with `TRYBUILD=overwrite` after a deliberate change).

#[test]
fn mistyped_launches_are_rejected() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
