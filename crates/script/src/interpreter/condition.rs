//! The IF/ELSE/ENDIF nesting state (Core's `ConditionStack`): instead of a
//! vector of booleans, the depth and the position of the first false entry,
//! which answers "is every branch taken?" in O(1) per opcode.

/// The conditional nesting of a running script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConditionStack {
    depth: usize,
    /// Index of the outermost false entry, `None` when all are true.
    first_false: Option<usize>,
}

impl ConditionStack {
    /// Whether no conditional is open.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.depth == 0
    }

    /// Whether the current position executes (every open branch is taken).
    #[inline]
    pub fn all_true(&self) -> bool {
        self.first_false.is_none()
    }

    /// Opens a conditional whose branch is `taken`.
    #[inline]
    pub fn push(&mut self, taken: bool) {
        if self.first_false.is_none() && !taken {
            self.first_false = Some(self.depth);
        }
        self.depth += 1;
    }

    /// Closes the innermost conditional; false if none is open.
    #[inline]
    pub fn pop(&mut self) -> bool {
        let Some(depth) = self.depth.checked_sub(1) else {
            return false;
        };
        self.depth = depth;
        if self.first_false == Some(depth) {
            self.first_false = None;
        }
        true
    }

    /// Flips the innermost conditional (OP_ELSE); false if none is open.
    /// Flipping an entry below an outer false one is unobservable.
    #[inline]
    pub fn toggle_top(&mut self) -> bool {
        let Some(top) = self.depth.checked_sub(1) else {
            return false;
        };
        match self.first_false {
            None => self.first_false = Some(top),
            Some(first) if first == top => self.first_false = None,
            Some(_) => {}
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares against the naive vector of booleans on every sequence of up to
    /// six operations.
    #[test]
    fn matches_vector_of_booleans() {
        for code in 0..4u32.pow(6) {
            let mut fast = ConditionStack::default();
            let mut naive: Vec<bool> = Vec::new();
            let mut rest = code;
            for _ in 0..6 {
                match rest % 4 {
                    0 => {
                        fast.push(true);
                        naive.push(true);
                    }
                    1 => {
                        fast.push(false);
                        naive.push(false);
                    }
                    2 => {
                        let ok = fast.toggle_top();
                        assert_eq!(ok, !naive.is_empty());
                        if let Some(top) = naive.last_mut() {
                            *top = !*top;
                        }
                    }
                    _ => assert_eq!(fast.pop(), naive.pop().is_some()),
                }
                assert_eq!(fast.all_true(), naive.iter().all(|taken| *taken));
                assert_eq!(fast.is_empty(), naive.is_empty());
                rest /= 4;
            }
        }
    }
}
