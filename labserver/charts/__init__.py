"""One seaborn theme and every chart the lessons draw: measured beside predicted, with units."""
