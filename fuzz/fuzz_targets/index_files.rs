#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| sextant::fuzzing::index_files(data));
