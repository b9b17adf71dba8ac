//! The statistics of a benchmark, as hyperfine computes them: mean, sample
//! standard deviation, median, minimum and maximum of each measure, the
//! ratio of two nodes' mean times with its propagated uncertainty, and the
//! warnings about runs that vary too much to trust. Pure functions.

/// A coefficient of variation (standard deviation over mean) above this
/// makes a node's times too noisy to trust: 5 %, several times what quiet
/// repeated IBD runs show on one machine (1-2 %).
pub const COEFFICIENT_OF_VARIATION_WARNING: f64 = 0.05;
/// A run whose modified z-score (Iglewicz and Hoaglin:
/// 0.6745 * (x - median) / median absolute deviation) is above this is an
/// outlier, their recommended cut.
pub const MODIFIED_Z_SCORE_OUTLIER: f64 = 3.5;
/// The constant that makes the median absolute deviation estimate the
/// standard deviation of normal data (the 75th percentile of the standard
/// normal distribution).
const NORMAL_QUARTILE: f64 = 0.6745;

/// One measure's summary over a node's measured runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of values.
    pub count: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1); `None` for a single value.
    pub standard_deviation: Option<f64>,
    /// Median (the mean of the two middle values for an even count).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// The median of sorted `values` (not empty).
fn median_of_sorted(sorted: &[f64]) -> f64 {
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    }
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

/// The summary of `values`; `None` when there are none.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    let sorted = sorted(values);
    let (&min, &max) = (sorted.first()?, sorted.last()?);
    let count = sorted.len();
    let mean = sorted.iter().sum::<f64>() / count as f64;
    let standard_deviation = (count > 1).then(|| {
        let squares: f64 = sorted.iter().map(|value| (value - mean).powi(2)).sum();
        (squares / (count - 1) as f64).sqrt()
    });
    Some(Summary { count, mean, standard_deviation, median: median_of_sorted(&sorted), min, max })
}

impl Summary {
    /// Standard deviation over mean; `None` for one value or a zero mean.
    pub fn coefficient_of_variation(&self) -> Option<f64> {
        self.standard_deviation.filter(|_| self.mean != 0.0).map(|deviation| deviation / self.mean)
    }
}

/// A ratio of two means with its uncertainty.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// `numerator.mean / denominator.mean`.
    pub value: f64,
    /// Its standard uncertainty, propagated from both standard deviations
    /// as independent errors: `value * sqrt((σn/n)² + (σd/d)²)`; `None`
    /// when a side has a single run (no deviation to propagate).
    pub uncertainty: Option<f64>,
}

/// `numerator`'s mean over `denominator`'s, as hyperfine's "times faster"
/// (here: how many times as long); `None` when the denominator's mean is 0.
pub fn ratio_of_means(numerator: &Summary, denominator: &Summary) -> Option<Ratio> {
    if denominator.mean == 0.0 || numerator.mean == 0.0 {
        return None;
    }
    let value = numerator.mean / denominator.mean;
    let relative =
        |summary: &Summary| summary.standard_deviation.map(|deviation| deviation / summary.mean);
    let uncertainty = match (relative(numerator), relative(denominator)) {
        (Some(top), Some(bottom)) => Some(value * (top.powi(2) + bottom.powi(2)).sqrt()),
        _ => None,
    };
    Some(Ratio { value, uncertainty })
}

/// The indexes of the outliers of `values`: modified z-score above
/// [`MODIFIED_Z_SCORE_OUTLIER`]. None when the median absolute deviation
/// is 0 (no spread to judge by) or there are fewer than 3 values.
pub fn outlier_indexes(values: &[f64]) -> Vec<usize> {
    if values.len() < 3 {
        return Vec::new();
    }
    let median = median_of_sorted(&sorted(values));
    let deviations: Vec<f64> = values.iter().map(|value| (value - median).abs()).collect();
    let median_deviation = median_of_sorted(&sorted(&deviations));
    if median_deviation == 0.0 {
        return Vec::new();
    }
    let score = |deviation: f64| NORMAL_QUARTILE * deviation / median_deviation;
    (0..values.len()).filter(|&index| score(deviations[index]) > MODIFIED_Z_SCORE_OUTLIER).collect()
}

/// The warnings about node `name`'s wall times `values` (in run order):
/// a coefficient of variation above [`COEFFICIENT_OF_VARIATION_WARNING`],
/// and each outlier (the first run named as such: a cold cache, as
/// hyperfine says, calls for `--warmup` or `--drop-caches`).
pub fn spread_warnings(name: &str, values: &[f64]) -> Vec<String> {
    let mut warnings = Vec::new();
    let Some(summary) = summarize(values) else { return warnings };
    if let Some(variation) =
        summary.coefficient_of_variation().filter(|&c| c > COEFFICIENT_OF_VARIATION_WARNING)
    {
        warnings.push(format!(
            "{name}: wall times vary by {:.1} % (standard deviation over mean, above {:.0} %): \
             the machine was busy or the runs too short to trust; try more runs, --warmup, \
             --drop-caches, or a quieter machine",
            variation * 100.0,
            COEFFICIENT_OF_VARIATION_WARNING * 100.0
        ));
    }
    for index in outlier_indexes(values) {
        let cause = if index == 0 { " (the first: a cold cache? try --warmup)" } else { "" };
        warnings.push(format!(
            "{name}: run {} is an outlier ({:.3} s against a median of {:.3} s){cause}",
            index + 1,
            values[index],
            summary.median
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(left: f64, right: f64) -> bool {
        (left - right).abs() < 1e-9
    }

    #[test]
    fn summarizes_as_hyperfine() {
        let summary = summarize(&[4.0, 2.0, 6.0, 8.0]).expect("values");
        assert_eq!((summary.count, summary.min, summary.max), (4, 2.0, 8.0));
        assert!(close(summary.mean, 5.0) && close(summary.median, 5.0));
        // Sample deviation: sqrt((1 + 9 + 1 + 9) / 3).
        assert!(close(summary.standard_deviation.expect("deviation"), (20.0f64 / 3.0).sqrt()));
        let single = summarize(&[3.0]).expect("value");
        assert_eq!((single.standard_deviation, single.median), (None, 3.0));
        assert_eq!(single.coefficient_of_variation(), None);
        assert_eq!(summarize(&[]), None);
        assert!(close(summarize(&[1.0, 9.0, 3.0]).expect("values").median, 3.0));
    }

    #[test]
    fn propagates_the_uncertainty_of_a_ratio() {
        let base = Summary {
            count: 3,
            mean: 10.0,
            standard_deviation: Some(0.3),
            median: 10.0,
            min: 9.7,
            max: 10.3,
        };
        let other = Summary { mean: 20.0, standard_deviation: Some(0.8), ..base };
        let ratio = ratio_of_means(&other, &base).expect("ratio");
        assert!(close(ratio.value, 2.0));
        // 2 * sqrt(0.04² + 0.03²) = 2 * 0.05.
        assert!(close(ratio.uncertainty.expect("deviations on both sides"), 0.1));
        let single = Summary { count: 1, standard_deviation: None, ..base };
        assert_eq!(ratio_of_means(&single, &base).expect("ratio").uncertainty, None);
        assert_eq!(ratio_of_means(&base, &Summary { mean: 0.0, ..base }), None);
    }

    #[test]
    fn warns_on_spread_and_outliers() {
        assert!(spread_warnings("a", &[10.0, 10.1, 9.9, 10.0]).is_empty());
        let noisy = spread_warnings("a", &[10.0, 12.0, 8.0]);
        assert_eq!(noisy.len(), 1, "{noisy:?}");
        assert!(noisy[0].contains("vary by 20.0 %"), "{noisy:?}");
        assert_eq!(outlier_indexes(&[15.0, 10.0, 10.1, 9.9, 10.0]), vec![0]);
        let cold = spread_warnings("b", &[15.0, 10.0, 10.1, 9.9, 10.0]);
        assert!(cold.iter().any(|warning| warning.contains("run 1 is an outlier")), "{cold:?}");
        assert!(cold.iter().any(|warning| warning.contains("cold cache")), "{cold:?}");
        assert!(outlier_indexes(&[1.0, 1.0, 1.0, 2.0]).is_empty(), "no spread to judge by");
        assert!(outlier_indexes(&[1.0, 100.0]).is_empty(), "two values have no outlier");
    }
}
