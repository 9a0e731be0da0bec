//! The host's key context and the scoped guard that borrows it for reserved-state I/O.

use keygroup::KeyGroup;

use crate::error::Result;

/// The host runtime's current-key context (e.g. Flink's `setCurrentKey` on the keyed state
/// backend), as seen by a native operator that must read or write reserved per-key-group
/// state such as canonical snapshot chunks.
///
/// Contract: [`current_key`](HostKeyContext::current_key) returns exactly what was last set,
/// including `None` ("no key set"); [`set_current_key`](HostKeyContext::set_current_key)
/// must not fail or panic; [`select_key_group`](HostKeyContext::select_key_group) sets some
/// host-chosen synthetic key that lies in `key_group`.
pub trait HostKeyContext {
    /// The host's key type.
    type Key;

    /// The current key, or `None` when no key is set.
    fn current_key(&self) -> Option<Self::Key>;

    /// Sets (or, with `None`, clears) the current key.
    fn set_current_key(&mut self, key: Option<Self::Key>);

    /// Makes the host's keyed-state I/O address `key_group`.
    ///
    /// # Errors
    /// Whatever the host reports; the guard then restores the previous key.
    fn select_key_group(&mut self, key_group: KeyGroup) -> Result<()>;
}

/// Selects a key group on the host for the guard's lifetime, and restores the host's exact
/// previous key context — including "no key set" — when dropped: on success, on error and
/// during a panic unwind.
///
/// ```
/// use keygroup::KeyGroup;
/// use state_api::{HostKeyContext, KeyGroupScope, Result};
///
/// #[derive(Default)]
/// struct Host { key: Option<u64> }
/// impl HostKeyContext for Host {
///     type Key = u64;
///     fn current_key(&self) -> Option<u64> { self.key }
///     fn set_current_key(&mut self, key: Option<u64>) { self.key = key; }
///     fn select_key_group(&mut self, kg: KeyGroup) -> Result<()> {
///         self.key = Some(1_000_000 + kg.get() as u64); // a synthetic key in that group
///         Ok(())
///     }
/// }
///
/// let mut host = Host::default();
/// {
///     let mut scope = KeyGroupScope::enter(&mut host, KeyGroup::new(7)?)?;
///     assert_eq!(scope.host().current_key(), Some(1_000_007));
/// }
/// assert_eq!(host.current_key(), None); // "no key set" is restored too
/// # Ok::<(), state_api::Error>(())
/// ```
pub struct KeyGroupScope<'h, H: HostKeyContext> {
    host: &'h mut H,
    previous: Option<H::Key>,
    key_group: KeyGroup,
}

impl<'h, H: HostKeyContext> KeyGroupScope<'h, H> {
    /// Remembers the host's current key and selects `key_group`.
    ///
    /// # Errors
    /// The host's error from [`HostKeyContext::select_key_group`]; the previous key has then
    /// already been restored.
    pub fn enter(host: &'h mut H, key_group: KeyGroup) -> Result<Self> {
        let previous = host.current_key();
        let scope = Self {
            host,
            previous,
            key_group,
        };
        scope.host.select_key_group(key_group)?;
        Ok(scope)
    }

    /// The host, with the key group selected.
    pub fn host(&mut self) -> &mut H {
        self.host
    }

    /// The selected key group.
    pub fn key_group(&self) -> KeyGroup {
        self.key_group
    }

    /// Selects another key group within the same scope (the original context is still what
    /// is restored at the end).
    ///
    /// # Errors
    /// The host's error.
    pub fn select(&mut self, key_group: KeyGroup) -> Result<()> {
        self.key_group = key_group;
        self.host.select_key_group(key_group)
    }
}

impl<H: HostKeyContext> Drop for KeyGroupScope<'_, H> {
    fn drop(&mut self) {
        self.host.set_current_key(self.previous.take());
    }
}

/// Runs `f` with `key_group` selected on `host`, then restores the previous key context
/// (also when `f` fails or panics).
///
/// # Errors
/// The host's selection error or `f`'s error.
pub fn with_key_group<H, T>(
    host: &mut H,
    key_group: KeyGroup,
    f: impl FnOnce(&mut H) -> Result<T>,
) -> Result<T>
where
    H: HostKeyContext,
{
    let mut scope = KeyGroupScope::enter(host, key_group)?;
    f(scope.host())
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use super::*;
    use crate::error::Error;

    /// A host that records every key it was given and can be told to fail selection.
    #[derive(Default)]
    struct MockHost {
        key: Option<String>,
        fail_select: bool,
        history: Vec<Option<String>>,
    }

    impl HostKeyContext for MockHost {
        type Key = String;
        fn current_key(&self) -> Option<String> {
            self.key.clone()
        }
        fn set_current_key(&mut self, key: Option<String>) {
            self.history.push(key.clone());
            self.key = key;
        }
        fn select_key_group(&mut self, key_group: KeyGroup) -> Result<()> {
            self.key = Some(format!("synthetic-{key_group}"));
            if self.fail_select {
                return Err(Error::Unsupported {
                    operation: "select",
                });
            }
            Ok(())
        }
    }

    fn kg(v: i32) -> KeyGroup {
        KeyGroup::new(v).unwrap()
    }

    #[test]
    fn repeated_checkpoints_never_leak_a_synthetic_key() {
        for previous in [None, Some("user-key".to_owned())] {
            let mut host = MockHost {
                key: previous.clone(),
                ..MockHost::default()
            };
            for round in 0..50 {
                // success
                let r = with_key_group(&mut host, kg(round % 7), |h| {
                    assert_eq!(h.key.as_deref(), Some(&*format!("synthetic-{}", round % 7)));
                    Ok(round)
                });
                assert_eq!(r.unwrap(), round);
                assert_eq!(host.key, previous);
                // the closure fails
                let r: Result<()> = with_key_group(&mut host, kg(3), |_| {
                    Err(Error::Unsupported { operation: "io" })
                });
                assert!(matches!(r, Err(Error::Unsupported { operation: "io" })));
                assert_eq!(host.key, previous);
                // a panic inside the scope
                let caught = catch_unwind(AssertUnwindSafe(|| {
                    let _scope = KeyGroupScope::enter(&mut host, kg(5)).unwrap();
                    panic!("reserved-state write failed");
                }));
                assert!(caught.is_err());
                assert_eq!(host.key, previous);
            }
            assert!(host.history.iter().all(|k| *k == previous));
        }
    }

    #[test]
    fn failed_selection_restores_previous_key() {
        let mut host = MockHost {
            fail_select: true,
            ..MockHost::default()
        };
        assert!(KeyGroupScope::enter(&mut host, kg(1)).is_err());
        assert_eq!(host.key, None);
        host.key = Some("k".into());
        assert!(with_key_group(&mut host, kg(1), |_| Ok(())).is_err());
        assert_eq!(host.key.as_deref(), Some("k"));
    }

    #[test]
    fn reselect_within_scope_restores_original() {
        let mut host = MockHost {
            key: Some("orig".into()),
            ..MockHost::default()
        };
        {
            let mut scope = KeyGroupScope::enter(&mut host, kg(1)).unwrap();
            scope.select(kg(2)).unwrap();
            assert_eq!(scope.key_group(), kg(2));
            assert_eq!(scope.host().key.as_deref(), Some("synthetic-2"));
        }
        assert_eq!(host.key.as_deref(), Some("orig"));
    }
}
