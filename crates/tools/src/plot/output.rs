//! Writing a chart as SVG and as PNG.
//!
//! PNG text is rasterised by plotters from the font [`super::font`] finds
//! (plotters' `ab_glyph` feature). SVG text is left to the viewer, but
//! plotters still measures each label with the registered font to lay the
//! chart out; without a font, [`SvgWithoutFont`] measures with a fixed
//! estimate instead (half the font size per character), so that SVG charts
//! never need a font.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

use super::draw::{Chart, DrawResult};

/// An SVG backend measuring text without a font (see the module docs).
pub struct SvgWithoutFont<'a> {
    inner: SVGBackend<'a>,
}

impl<'a> SvgWithoutFont<'a> {
    /// A backend writing an SVG file of `size` pixels to `path`.
    pub fn new(path: &'a Path, size: (u32, u32)) -> SvgWithoutFont<'a> {
        SvgWithoutFont { inner: SVGBackend::new(path, size) }
    }
}

/// Forwards every drawing call to `inner`.
impl DrawingBackend for SvgWithoutFont<'_> {
    type ErrorType = <SVGBackend<'static> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vertices: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vertices, style)
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        position: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_text(text, style, position)
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        Ok(estimated_text_pixels(text, style.size()))
    }
}

/// A label's size without a font: half the font size per character, the
/// font size high (what plotters calls size is about 1.24 em).
pub fn estimated_text_pixels(text: &str, size: f64) -> (u32, u32) {
    let characters = text.chars().count() as f64;
    ((characters * size * 0.5).round() as u32, size.round() as u32)
}

/// Draws `chart` into the SVG file `path`; `with_font` when a font is
/// registered (plotters then measures the labels with it).
pub fn write_svg(chart: &Chart<'_>, path: &Path, with_font: bool) -> DrawResult {
    if with_font {
        let root = SVGBackend::new(path, chart.size_pixels()).into_drawing_area();
        draw_and_present(chart, &root)
    } else {
        let root = SvgWithoutFont::new(path, chart.size_pixels()).into_drawing_area();
        draw_and_present(chart, &root)
    }
}

/// Draws `chart` into the PNG file `path` (a font must be registered).
pub fn write_png(chart: &Chart<'_>, path: &Path) -> DrawResult {
    let root = BitMapBackend::new(path, chart.size_pixels()).into_drawing_area();
    draw_and_present(chart, &root)
}

fn draw_and_present<DB: DrawingBackend>(
    chart: &Chart<'_>,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    chart.draw_on(root)?;
    root.present()?;
    Ok(())
}
