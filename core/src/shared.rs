//! [`Shared`]: a part of a world (a machine, a client's links, the monitor) shared between a
//! state and its successors until a step changes it, with its hash computed once.
//!
//! The model checker fingerprints every state it generates. Most steps change one or two parts
//! of a world; the others are the parent's, shared, and their hashes are the parent's too, so a
//! world hashes the parts a step changed and reuses the rest.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A copy-on-write part with a memoized hash: read through `Deref`, changed through
/// [`Shared::make_mut`] (which copies it if it is shared and forgets the hash).
pub struct Shared<T> {
    value: Arc<T>,
    /// The value's hash, or 0 while not computed yet.
    hash: AtomicU64,
}

impl<T> Shared<T> {
    /// A part of its own.
    pub fn new(value: T) -> Self {
        Shared {
            value: Arc::new(value),
            hash: AtomicU64::new(0),
        }
    }
}

impl<T> Shared<T> {
    /// A part that is already shared as an `Arc` (a committed catalog).
    pub fn from_arc(value: Arc<T>) -> Self {
        Shared {
            value,
            hash: AtomicU64::new(0),
        }
    }

    /// The part as an `Arc`, to hand on.
    pub fn arc(&self) -> &Arc<T> {
        &self.value
    }

    /// `value`, known to hash like `self` (the same part renumbered, where the hash leaves the
    /// number out): it takes over `self`'s hash instead of computing it again.
    pub fn hashing_like(&self, value: T) -> Self {
        Shared {
            value: Arc::new(value),
            hash: AtomicU64::new(self.hash.load(Ordering::Relaxed)),
        }
    }
}

impl<T: Clone> Shared<T> {
    /// The part, to change: copied first if another state shares it.
    pub fn make_mut(this: &mut Self) -> &mut T {
        *this.hash.get_mut() = 0;
        Arc::make_mut(&mut this.value)
    }
}

impl<T: Default> Default for Shared<T> {
    fn default() -> Self {
        Shared::new(T::default())
    }
}

/// Collects into a part of its own.
impl<A, T: FromIterator<A>> FromIterator<A> for Shared<T> {
    fn from_iter<I: IntoIterator<Item = A>>(iter: I) -> Self {
        Shared::new(iter.into_iter().collect())
    }
}

impl<'a, T> IntoIterator for &'a Shared<T>
where
    &'a T: IntoIterator,
{
    type Item = <&'a T as IntoIterator>::Item;
    type IntoIter = <&'a T as IntoIterator>::IntoIter;
    fn into_iter(self) -> Self::IntoIter {
        (&*self.value).into_iter()
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared {
            value: self.value.clone(),
            hash: AtomicU64::new(self.hash.load(Ordering::Relaxed)),
        }
    }
}

impl<T: Hash> Hash for Shared<T> {
    /// Feeds the value's own hash (ahash, fixed seeds), computed on first use.
    fn hash<H: Hasher>(&self, h: &mut H) {
        let mut v = self.hash.load(Ordering::Relaxed);
        if v == 0 {
            v = ahash::RandomState::with_seeds(0x7368, 0x6172, 0x6564, 0x7061)
                .hash_one(&*self.value)
                .max(1);
            self.hash.store(v, Ordering::Relaxed);
        }
        h.write_u64(v);
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.value, &other.value) || *self.value == *other.value
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hash_of<T: Hash>(t: &T) -> u64 {
        std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
            .hash_one(t)
    }

    #[test]
    fn a_change_is_seen_by_the_hash_and_a_copy_keeps_the_original() {
        let a = Shared::new(vec![1, 2]);
        let before = hash_of(&a);
        let mut b = a.clone();
        assert_eq!(hash_of(&b), before);
        Shared::make_mut(&mut b).push(3);
        assert_ne!(hash_of(&b), before);
        assert_eq!(hash_of(&a), before);
        assert_eq!(*a, [1, 2]);
        assert_ne!(a, b);
        // Equal values hash equally whatever their history.
        assert_eq!(hash_of(&b), hash_of(&Shared::new(vec![1, 2, 3])));
    }
}
