//! Lu et al.'s crowd study: people guess a label from each method's top-k
//! words. [`tasks`] renders what a person sees; [`score`] turns the answers
//! into the paper's numbers (A_ijk, p_jk, s_j, flips). Exporting a study and
//! importing a platform's answers (`grid crowd`) build on these.

pub mod score;
pub mod tasks;
